// Package vecindex is the in-process index of memory vectors that hybrid
// memory search asks for nearest neighbours.
//
// Vectors are kept by (tenant, layer, scope) partition, so tenant and layer
// filtering is exact by construction: a query reads only the partitions of
// the scopes it names, and no approximate structure ever spans two
// partitions, so none can hand back a neighbour outside the caller's
// scopes. Vectors are stored normalised, so a score is a dot product (the
// cosine similarity), and a partition is one contiguous []float32.
//
// A partition below approxRows (20,000) vectors is scanned whole: exact,
// and about as fast as any index at that size. A larger one is ranked by
// an inverted file (IVF, ivf.go): spherical k-means groups its rows under
// sqrt(n) centroids, and a query scans the rows of the 1/16 of the lists
// whose centroids are nearest to it. The candidates are scored exactly
// (the dot product with the stored vector), so an approximate result is
// only ever a near neighbour missed, never a wrong score or a row of
// another scope. Every row also has 8-bit codes (codes.go), a quarter of
// its bytes, whose product with the query bounds its cosine: a scan reads
// them first and scores exactly only the rows that could still enter the
// k best, so the codes save reading most rows' floats without changing
// any answer. A trained partition keeps its rows in the order of its
// lists (layout), so a probed list is read from contiguous memory,
// and rows are scored with AVX2/FMA where the CPU has them (dot). IVF
// rather than HNSW, measured and reasoned in docs/BENCHMARKS.md:
//   - writes stay exact and cheap: a vector lives in exactly one list, so
//     an update or a delete is a swap-removal, with no tombstones and no
//     graph to repair; a new vector costs sqrt(n) dot products;
//   - the index is rebuilt from the store on every start, and training an
//     IVF (k-means on a sample, then one pass assigning every row) costs
//     about half of inserting a million vectors into an HNSW graph, spread
//     over every CPU; until a partition's lists are trained it is scanned
//     exactly;
//   - the memory is the vectors themselves (1M x 256 float32: 1 GiB) plus
//     12 bytes a row, where an HNSW graph adds 100+ bytes a row of links
//     (the codes add dim+8 bytes a row, 264 MB at 1M x 256);
//   - no pure-Go HNSW module was available to vet here, and this is
//     300 lines.
//
// The lists are trained in the background when a partition crosses
// approxRows and again each time it doubles; searches and writes go on
// meanwhile (Settle waits for the trainers).
//
// The index holds the vectors of one model; the store is the truth, and
// the index is rebuilt from it on start (store.VectorStore.ScanVectors) and
// kept in step by the writes of this process (and, on PostgreSQL, those of
// other replicas: store.VectorFeed).
package vecindex

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/toolsvc/toolsvc/internal/store"
)

// Scope selects one partition.
type Scope struct {
	Tenant  string
	Layer   store.Layer
	ScopeID string
}

// Hit is one neighbour.
type Hit struct {
	ID string
	// Cosine is the cosine similarity with the query, in -1..1.
	Cosine float64
}

// slot is where a memory's vector is: its partition and row.
type slot struct {
	p   *partition
	row int
}

type partition struct {
	sc   Scope
	ids  []string
	vecs []float32 // len(ids) * dim, normalised rows
	// codes and rc are the rows' 8-bit codes (len(ids) * dim) and their
	// scales and radii (codes.go).
	codes []int8
	rc    []rowCode
	// ivf, once trained, ranks the partition approximately (ivf.go).
	ivf *ivf
	// trainedAt is the partition's size when ivf was trained.
	trainedAt int
	// laidOut is the partition's size when its rows were last put in the
	// order of ivf's lists (layout); layingOut is set while that runs.
	laidOut   int
	layingOut bool
	// training is set while a trainer runs; dirty then names the ids
	// written since it started, whose list it must not trust.
	training bool
	dirty    map[string]bool
}

// Index is safe for concurrent use.
type Index struct {
	mu    sync.RWMutex
	dim   int
	parts map[Scope]*partition
	// where holds each memory's slot by tenant, then id. Scoring the
	// full-text candidates of a search looks up a few hundred of them, so
	// a lookup hashes the id alone and an entry is 32 bytes with one
	// pointer besides the id's; keyed by (tenant, id) and naming the
	// partition by its Scope, an entry was 80 bytes, a lookup hashed two
	// strings and then the Scope's three to find the partition, and the
	// garbage collector followed five pointers an entry (docs/BENCHMARKS.md).
	where map[string]map[string]slot
	// n counts the vectors indexed.
	n int
	// trainers counts running trainers (Settle waits for them).
	trainers sync.WaitGroup
}

// New returns an empty index; its dimension is set by the first vector.
func New() *Index {
	return &Index{parts: map[Scope]*partition{}, where: map[string]map[string]slot{}}
}

// ErrDimension reports a vector whose length differs from the index's.
var ErrDimension = errors.New("vecindex: vector dimension differs from the index's")

// Len is the number of vectors.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.n
}

// Dim is the vectors' length, 0 while the index is empty.
func (x *Index) Dim() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.dim
}

// Put adds or replaces the vector of memory id of sc. A zero vector (a
// text with no known token) is not indexed: it is similar to nothing.
func (x *Index) Put(sc Scope, id string, vec []float32) error {
	v, ok := normalised(vec)
	var (
		codes []int8
		rc    rowCode
	)
	if ok {
		// Outside the lock, as the normalising: searches wait for it.
		codes, rc = encode(make([]int8, 0, len(v)), v)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.dim == 0 && x.n == 0 {
		x.dim = len(vec)
	}
	if len(vec) != x.dim {
		return fmt.Errorf("%w: %d, want %d", ErrDimension, len(vec), x.dim)
	}
	x.removeLocked(sc.Tenant, id)
	if !ok {
		return nil
	}
	p := x.parts[sc]
	if p == nil {
		p = &partition{sc: sc}
		x.parts[sc] = p
	}
	row := len(p.ids)
	ids := x.where[sc.Tenant]
	if ids == nil {
		ids = map[string]slot{}
		x.where[sc.Tenant] = ids
	}
	ids[id] = slot{p: p, row: row}
	x.n++
	p.ids = append(p.ids, id)
	p.vecs = append(p.vecs, v...)
	p.codes = append(p.codes, codes...)
	p.rc = append(p.rc, rc)
	if p.ivf != nil {
		p.ivf.add(row, v)
		if !p.training && row+1 >= p.laidOut+p.laidOut/layoutGrowth {
			x.startLayoutLocked(sc, p)
		}
	}
	if p.training {
		p.dirty[id] = true
	}
	if n := row + 1; n >= approxRows && !p.training && (p.ivf == nil || n >= 2*p.trainedAt) {
		p.training, p.dirty = true, map[string]bool{}
		x.trainers.Add(1)
		go func() {
			defer x.trainers.Done()
			x.train(sc, p)
		}()
	}
	return nil
}

// Settle waits until the inverted files being trained are in use, so that
// what follows (a benchmark, a test) sees the index's steady state.
func (x *Index) Settle() { x.trainers.Wait() }

// Remove drops the tenant's memory id, if indexed.
func (x *Index) Remove(tenant, id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(tenant, id)
	if x.n == 0 {
		x.dim = 0
	}
}

// Vector returns a copy of the stored (normalised) vector of the tenant's
// memory id.
func (x *Index) Vector(tenant, id string) ([]float32, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	at, ok := x.where[tenant][id]
	if !ok {
		return nil, false
	}
	i := at.row
	return append([]float32(nil), at.p.vecs[i*x.dim:(i+1)*x.dim]...), true
}

// Visit calls fn with the index in ids and the stored (normalised) vector
// of each of the tenant's memories ids that is indexed, all under one read
// lock and without copying: fn must neither keep vec nor call the index.
// It serves scoring many known memories against a query, where a copy per
// memory (Vector) costs more than the scoring.
func (x *Index) Visit(tenant string, ids []string, fn func(i int, vec []float32)) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	slots := x.where[tenant]
	for i, id := range ids {
		if at, ok := slots[id]; ok {
			r := at.row
			fn(i, at.p.vecs[r*x.dim:(r+1)*x.dim])
		}
	}
}

func (x *Index) removeLocked(tenant, id string) {
	slots := x.where[tenant]
	at, ok := slots[id]
	if !ok {
		return
	}
	delete(slots, id)
	x.n--
	p := at.p
	// The last row takes the removed one's place: order within a
	// partition carries no meaning.
	i, last := at.row, len(p.ids)-1
	if p.ivf != nil {
		p.ivf.remove(i, last)
	}
	if i != last {
		p.ids[i] = p.ids[last]
		copy(p.vecs[i*x.dim:(i+1)*x.dim], p.vecs[last*x.dim:])
		copy(p.codes[i*x.dim:(i+1)*x.dim], p.codes[last*x.dim:])
		p.rc[i] = p.rc[last]
		slots[p.ids[i]] = slot{p: p, row: i}
	}
	p.ids = p.ids[:last]
	p.vecs = p.vecs[:last*x.dim]
	p.codes = p.codes[:last*x.dim]
	p.rc = p.rc[:last]
	if len(p.ids) == 0 {
		delete(x.parts, p.sc)
	}
	if len(slots) == 0 {
		delete(x.where, tenant)
	}
}

// parallelRows is the partition size from which a scan is split among
// goroutines (a variable so that tests can exercise the split).
var parallelRows = 32 << 10

// Search returns the k vectors of the given scopes most similar to q, best
// first (ties by id). A q of another dimension, or zero, matches nothing.
func (x *Index) Search(q []float32, scopes []Scope, k int) []Hit {
	qn, ok := normalised(q)
	if !ok || k <= 0 {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(q) != x.dim {
		return nil
	}
	qc := encodeQuery(qn)
	top := &topK{k: k}
	seen := map[Scope]bool{}
	for _, sc := range scopes {
		p := x.parts[sc]
		if p == nil || seen[sc] {
			continue
		}
		seen[sc] = true
		// A partition that shrank below the threshold is scanned whole
		// again: its lists, sized for more rows, would probe too few.
		if p.ivf != nil && len(p.ids) >= approxRows {
			scanIVF(p, qn, &qc, x.dim, top)
			continue
		}
		n := len(p.ids)
		workers := min(runtime.GOMAXPROCS(0), n/parallelRows)
		if workers < 2 {
			scan(p, qn, &qc, x.dim, 0, n, top)
			continue
		}
		tops := make([]*topK, workers)
		var wg sync.WaitGroup
		for w := range workers {
			tops[w] = &topK{k: k}
			lo, hi := n*w/workers, n*(w+1)/workers
			wg.Add(1)
			go func() {
				defer wg.Done()
				scan(p, qn, &qc, x.dim, lo, hi, tops[w])
			}()
		}
		wg.Wait()
		for _, t := range tops {
			for _, h := range t.h {
				top.offer(h)
			}
		}
	}
	return top.sorted()
}

// SearchExact is Search with every partition scanned whole, inverted file
// or not: the reference an approximate answer is measured against (recall
// in benchmarks), at the cost of a full scan.
func (x *Index) SearchExact(q []float32, scopes []Scope, k int) []Hit {
	qn, ok := normalised(q)
	if !ok || k <= 0 {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(q) != x.dim {
		return nil
	}
	qc := encodeQuery(qn)
	top := &topK{k: k}
	seen := map[Scope]bool{}
	for _, sc := range scopes {
		if p := x.parts[sc]; p != nil && !seen[sc] {
			seen[sc] = true
			scan(p, qn, &qc, x.dim, 0, len(p.ids), top)
		}
	}
	return top.sorted()
}

// scan offers to top rows lo to hi of p (offerRow: each scored exactly
// unless its codes rule it out).
func scan(p *partition, q []float32, qc *queryCodes, dim, lo, hi int, top *topK) {
	for i := lo; i < hi; i++ {
		offerRow(p, q, qc, dim, i, top)
	}
}

// dot is the inner product of a and b[:len(a)]. Scoring rows is nearly
// all of a search's own work, so where the CPU has AVX2 and FMA it runs in
// assembly (dot_amd64.s, eight lanes with fused multiply-adds); elsewhere
// in portable Go.
func dot(a, b []float32) float64 {
	if haveFMA {
		return float64(dotFMA(a, b[:len(a)]))
	}
	return dotGo(a, b)
}

// dotGo is the portable inner product, four lanes at a time.
func dotGo(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return float64((s0 + s1) + (s2 + s3))
}

// normalised returns v scaled to unit length, or false for a zero or
// non-finite vector.
func normalised(v []float32) ([]float32, bool) {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return nil, false
	}
	inv := 1 / math.Sqrt(n)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out, true
}

// topK keeps the k best hits in a min-heap (worst at the root).
type topK struct {
	k int
	h hitHeap
}

func (t *topK) offer(h Hit) {
	if len(t.h) < t.k {
		heap.Push(&t.h, h)
		return
	}
	if worse(t.h[0], h) {
		t.h[0] = h
		heap.Fix(&t.h, 0)
	}
}

func (t *topK) sorted() []Hit {
	out := make([]Hit, len(t.h))
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(&t.h).(Hit)
	}
	return out
}

// worse orders hits: lower cosine, then the larger id, is worse.
func worse(a, b Hit) bool {
	if a.Cosine != b.Cosine {
		return a.Cosine < b.Cosine
	}
	return a.ID > b.ID
}

type hitHeap []Hit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(Hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
