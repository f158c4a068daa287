package vecindex

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// An inverted file (IVF) ranks the rows of one large partition: the rows
// are grouped by their nearest centroid, and a query scans only the rows
// of the lists whose centroids are nearest to it. Why IVF rather than
// HNSW is said in the package comment.

// Tuning of the inverted files. They are variables so that tests can reach
// the approximate path with small partitions.
var (
	// approxRows is the partition size from which a partition gets an
	// inverted file; smaller partitions are always scanned whole, which
	// costs about as much as probing an inverted file would.
	approxRows = 20_000
	// probeDivisor sets the share of the lists a query probes: 1/16 of
	// them, at least minProbe.
	probeDivisor = 16
	minProbe     = 8
)

const (
	// sampleFactor is how many training rows k-means uses per list.
	sampleFactor = 40
	// kmeansRounds is how many rounds of k-means train the centroids.
	kmeansRounds = 10
	// maxLists bounds the lists of one partition (sqrt of its rows).
	minLists, maxLists = 16, 2048
)

// ivf groups the rows of one partition by nearest centroid. Rows are the
// partition's row numbers; it follows the partition's appends and
// swap-removals, so it never holds a row that is gone.
type ivf struct {
	dim       int
	centroids []float32 // len(lists) * dim, unit length
	lists     [][]int32 // list -> rows
	of        []int32   // row -> its list
	at        []int32   // row -> its position in lists[of[row]]
}

// listsFor is the number of lists for a partition of n rows.
func listsFor(n int) int {
	return min(max(int(math.Sqrt(float64(n))), minLists), maxLists)
}

// nearestList returns the list whose centroid is nearest to v.
func (f *ivf) nearestList(v []float32) int32 {
	best, bestS := 0, math.Inf(-1)
	for l := range f.lists {
		if s := dot(v, f.centroids[l*f.dim:(l+1)*f.dim]); s > bestS {
			best, bestS = l, s
		}
	}
	return int32(best)
}

// add files row (the partition's new last row) with vector v.
func (f *ivf) add(row int, v []float32) {
	f.addTo(row, f.nearestList(v))
}

func (f *ivf) addTo(row int, l int32) {
	f.of = append(f.of, l)
	f.at = append(f.at, int32(len(f.lists[l])))
	f.lists[l] = append(f.lists[l], int32(row))
}

// remove follows the partition's swap-removal: row is dropped and the
// last row takes its number.
func (f *ivf) remove(row, last int) {
	l, a := f.of[row], f.at[row]
	lst := f.lists[l]
	end := lst[len(lst)-1]
	lst[a] = end
	f.at[end] = a
	f.lists[l] = lst[:len(lst)-1]
	if row != last {
		ll, la := f.of[last], f.at[last]
		f.lists[ll][la] = int32(row)
		f.of[row], f.at[row] = ll, la
	}
	f.of, f.at = f.of[:last], f.at[:last]
}

// probe returns the lists a query q scans: the probes nearest centroids.
func (f *ivf) probe(q []float32) []int {
	n := len(f.lists)
	want := min(n, max(minProbe, (n+probeDivisor-1)/probeDivisor))
	type cand struct {
		l int
		s float64
	}
	cs := make([]cand, n)
	for l := range n {
		cs[l] = cand{l, dot(q, f.centroids[l*f.dim:(l+1)*f.dim])}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		switch {
		case a.s > b.s:
			return -1
		case a.s < b.s:
			return 1
		}
		return a.l - b.l
	})
	out := make([]int, want)
	for i := range out {
		out[i] = cs[i].l
	}
	return out
}

// scanIVF offers to top the rows of the lists nearest to q (offerRow),
// nearest list first, so the k best fill early and the codes rule out
// more of the rest.
func scanIVF(p *partition, q []float32, qc *queryCodes, dim int, top *topK) {
	f := p.ivf
	for _, l := range f.probe(q) {
		for _, row := range f.lists[l] {
			offerRow(p, q, qc, dim, int(row), top)
		}
	}
}

// kmeans trains nlist unit centroids on the rows of sample (spherical
// k-means: assignment by dot product, a centroid is its rows' normalised
// mean), starting from rows picked with a fixed seed so that training is
// reproducible. Assignment runs on every CPU; sums are added in row
// order, so the result does not depend on scheduling.
func kmeans(sample []float32, dim, nlist int) []float32 {
	n := len(sample) / dim
	r := rand.New(rand.NewPCG(uint64(n), uint64(nlist)))
	cents := make([]float32, nlist*dim)
	for l, i := range r.Perm(n)[:nlist] {
		copy(cents[l*dim:(l+1)*dim], sample[i*dim:(i+1)*dim])
	}
	f := &ivf{dim: dim, centroids: cents, lists: make([][]int32, nlist)}
	assign := make([]int32, n)
	sums := make([]float64, nlist*dim)
	counts := make([]int, nlist)
	for range kmeansRounds {
		assignAll(f, sample, assign)
		clear(sums)
		clear(counts)
		for i, l := range assign {
			counts[l]++
			row, sum := sample[i*dim:(i+1)*dim], sums[int(l)*dim:(int(l)+1)*dim]
			for j, x := range row {
				sum[j] += float64(x)
			}
		}
		for l := range nlist {
			c := cents[l*dim : (l+1)*dim]
			if counts[l] == 0 {
				// An empty list restarts from a random row.
				copy(c, sample[r.IntN(n)*dim:])
				continue
			}
			var norm float64
			for _, x := range sums[l*dim : (l+1)*dim] {
				norm += x * x
			}
			if norm == 0 {
				continue
			}
			inv := 1 / math.Sqrt(norm)
			for j, x := range sums[l*dim : (l+1)*dim] {
				c[j] = float32(x * inv)
			}
		}
	}
	return cents
}

// assignAll sets assign[i] to the nearest list of row i of rows, on every
// CPU.
func assignAll(f *ivf, rows []float32, assign []int32) {
	n := len(assign)
	workers := max(1, min(runtime.GOMAXPROCS(0), n/1024))
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				assign[i] = f.nearestList(rows[i*f.dim : (i+1)*f.dim])
			}
		}()
	}
	wg.Wait()
}

// trainChunk is how many rows the trainer copies under one read lock.
const trainChunk = 4096

// train builds an inverted file for partition p of sc and puts it in use.
// The slow parts (k-means, assigning every row) run without the lock, on
// copies taken chunk by chunk under the read lock, so searches and writes
// go on meanwhile; rows written since training began are filed again when
// the new inverted file is installed, under the write lock.
func (x *Index) train(sc Scope, p *partition) {
	x.mu.RLock()
	if x.parts[sc] != p {
		x.mu.RUnlock()
		return
	}
	dim, n := x.dim, len(p.ids)
	nlist := min(listsFor(n), n)
	m := min(n, nlist*sampleFactor)
	sample := make([]float32, m*dim)
	for i := range m {
		row := i * n / m
		copy(sample[i*dim:(i+1)*dim], p.vecs[row*dim:(row+1)*dim])
	}
	x.mu.RUnlock()

	f := &ivf{dim: dim, centroids: kmeans(sample, dim, nlist), lists: make([][]int32, nlist)}
	listOf := make(map[string]int32, n)
	var (
		ids  []string
		rows []float32
	)
	for lo := 0; ; lo += trainChunk {
		x.mu.RLock()
		if x.parts[sc] != p || lo >= len(p.ids) {
			x.mu.RUnlock()
			break
		}
		hi := min(lo+trainChunk, len(p.ids))
		ids = append(ids[:0], p.ids[lo:hi]...)
		rows = append(rows[:0], p.vecs[lo*dim:hi*dim]...)
		x.mu.RUnlock()
		assign := make([]int32, len(ids))
		assignAll(f, rows, assign)
		for i, id := range ids {
			listOf[id] = assign[i]
		}
	}

	x.mu.Lock()
	defer x.mu.Unlock()
	if x.parts[sc] != p {
		return // emptied meanwhile; a new partition trains anew
	}
	for i, id := range p.ids {
		l, ok := listOf[id]
		if !ok || p.dirty[id] {
			l = f.nearestList(p.vecs[i*dim : (i+1)*dim])
		}
		f.addTo(i, l)
	}
	p.ivf, p.trainedAt, p.training, p.dirty = f, len(p.ids), false, nil
	x.startLayoutLocked(sc, p)
}

// layoutGrowth sets when a trained partition's rows are put back in the
// order of its lists: once the rows appended since the last layout reach
// 1/layoutGrowth of the rows laid out then.
const layoutGrowth = 8

// layoutChunk is how many rows a layout moves per hold of the write lock:
// about half a millisecond of searches and writes waiting at 256
// dimensions (a layout of 200k such rows took 0.4 s in all, in holds of
// 1,024 rows that made a reader wait up to 5 ms at load average 4).
const layoutChunk = 256

// startLayoutLocked starts a layout of partition p of sc in the
// background, unless one runs. It must be called with x.mu held for
// writing.
func (x *Index) startLayoutLocked(sc Scope, p *partition) {
	if p.layingOut || p.ivf == nil {
		return
	}
	p.layingOut, p.laidOut = true, len(p.ids)
	x.trainers.Add(1)
	go func() {
		defer x.trainers.Done()
		x.layout(sc, p)
	}()
}

// layout moves the rows of partition p of sc into the order of its lists,
// so that each list's rows are contiguous and a query reads the lists it
// probes as a few sequential runs of memory. Filed at random over a large
// partition, every row a query scores was a cache and TLB miss of its
// own, and the reads cost several times the arithmetic (measured:
// docs/BENCHMARKS.md, "Design measurements"). It runs after
// each training and when 1/layoutGrowth of the rows has been appended
// since the last layout; rows appended in between are filed at the end of
// their lists but not moved.
//
// It walks the lists in order and swaps each list's rows into the next
// positions, layoutChunk rows per hold of the write lock, so searches and
// writes wait about half a millisecond at a time, never for the whole
// partition (a permutation of 500k rows at once held the lock 1.5 s on a
// loaded machine). Each swap keeps every structure true (rows, ids, the
// ids' slots, the lists), so a write between two chunks (an append, a
// swap-removal) is safe: at worst a row ends up out of order until the
// next layout. A new inverted file (a training) starts the walk again
// on its lists.
func (x *Index) layout(sc Scope, p *partition) {
	f := (*ivf)(nil)
	l, a, pos := 0, 0, 0
	for {
		x.mu.Lock()
		if x.parts[sc] != p || p.ivf == nil {
			if x.parts[sc] == p {
				p.layingOut = false
			}
			x.mu.Unlock()
			return
		}
		if p.ivf != f { // trained meanwhile: lay out the new lists from the start
			f, l, a, pos = p.ivf, 0, 0, 0
			p.laidOut = len(p.ids)
		}
		for range layoutChunk {
			for l < len(f.lists) && a >= len(f.lists[l]) {
				l, a = l+1, 0
			}
			if l == len(f.lists) || pos >= len(p.ids) {
				p.layingOut = false
				x.mu.Unlock()
				return
			}
			if r := int(f.lists[l][a]); r != pos {
				x.swapRowsLocked(sc, p, r, pos)
			}
			a, pos = a+1, pos+1
		}
		x.mu.Unlock()
	}
}

// swapRowsLocked exchanges rows i and j of partition p of sc: their ids,
// vectors and codes, the ids' slots and their places in the inverted
// file's lists.
func (x *Index) swapRowsLocked(sc Scope, p *partition, i, j int) {
	dim, f := x.dim, p.ivf
	p.ids[i], p.ids[j] = p.ids[j], p.ids[i]
	vi, vj := p.vecs[i*dim:(i+1)*dim], p.vecs[j*dim:(j+1)*dim]
	for k := range vi {
		vi[k], vj[k] = vj[k], vi[k]
	}
	ci, cj := p.codes[i*dim:(i+1)*dim], p.codes[j*dim:(j+1)*dim]
	for k := range ci {
		ci[k], cj[k] = cj[k], ci[k]
	}
	p.rc[i], p.rc[j] = p.rc[j], p.rc[i]
	slots := x.where[sc.Tenant]
	slots[p.ids[i]], slots[p.ids[j]] = slot{p: p, row: i}, slot{p: p, row: j}
	li, ai, lj, aj := f.of[i], f.at[i], f.of[j], f.at[j]
	f.lists[li][ai], f.lists[lj][aj] = int32(j), int32(i)
	f.of[i], f.at[i], f.of[j], f.at[j] = lj, aj, li, ai
}
