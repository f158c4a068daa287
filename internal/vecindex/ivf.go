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

// scanIVF offers to top the rows of the lists nearest to q.
func scanIVF(p *partition, q []float32, dim int, top *topK) {
	f := p.ivf
	for _, l := range f.probe(q) {
		for _, row := range f.lists[l] {
			i := int(row)
			s := dot(q, p.vecs[i*dim:(i+1)*dim])
			if len(top.h) < top.k || s > top.h[0].Cosine || (s == top.h[0].Cosine && p.ids[i] < top.h[0].ID) {
				top.offer(Hit{ID: p.ids[i], Cosine: s})
			}
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
	x.layoutLocked(sc, p)
}

// layoutGrowth sets when a trained partition's rows are put back in the
// order of its lists: once the rows appended since the last layout reach
// 1/layoutGrowth of the rows laid out then.
const layoutGrowth = 8

// layoutLocked moves the rows of partition p of sc into the order of its
// lists, so that each list's rows are contiguous and a query reads the
// lists it probes as a few sequential runs of memory. Filed at random over
// a large partition, every row a query scores was a cache and TLB miss of
// its own, and the reads cost several times the arithmetic (scoring 16k
// of 250k rows: 9-10 ms at random, 0.7-0.8 ms contiguous). It runs at
// each training and when a 1/layoutGrowth of the rows has been appended
// since; rows appended in between are filed at the end of their lists but
// not moved, and a swap-removal moves one row. It permutes in place (no
// second copy of the vectors) under the write lock, so searches and writes
// wait for it: about 1.5 s for 500k rows on a loaded 2-core machine,
// mostly while the index is rebuilt on start.
func (x *Index) layoutLocked(sc Scope, p *partition) {
	f, dim, n := p.ivf, x.dim, len(p.ids)
	order := make([]int32, 0, n) // new row -> old row
	for _, lst := range f.lists {
		order = append(order, lst...)
	}
	// Apply the permutation cycle by cycle: position j takes old row
	// order[j], whose place is then filled in turn.
	done := make([]bool, n)
	tmp := make([]float32, dim)
	for s := range n {
		if done[s] {
			continue
		}
		done[s] = true
		if int(order[s]) == s {
			continue
		}
		tmpID := p.ids[s]
		copy(tmp, p.vecs[s*dim:(s+1)*dim])
		for j := s; ; {
			k := int(order[j])
			done[j] = true
			if k == s {
				p.ids[j] = tmpID
				copy(p.vecs[j*dim:(j+1)*dim], tmp)
				break
			}
			p.ids[j] = p.ids[k]
			copy(p.vecs[j*dim:(j+1)*dim], p.vecs[k*dim:(k+1)*dim])
			j = k
		}
	}
	row := 0
	for l, lst := range f.lists {
		for a := range lst {
			lst[a] = int32(row)
			f.of[row], f.at[row] = int32(l), int32(a)
			row++
		}
	}
	for i, id := range p.ids {
		if int(order[i]) != i {
			x.where[memKey{sc.Tenant, id}] = slot{sc: sc, row: i}
		}
	}
	p.laidOut = n
}
