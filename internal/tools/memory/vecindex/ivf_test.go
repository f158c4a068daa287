package vecindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
)

// clustered returns n vectors around nc random centres (noise of the given
// spread), as real embeddings cluster by topic.
func clustered(r *rand.Rand, n, nc, dim int, spread float64) [][]float32 {
	centres := make([][]float32, nc)
	for i := range centres {
		centres[i] = randVec(r, dim)
	}
	out := make([][]float32, n)
	for i := range out {
		c := centres[r.IntN(nc)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + float32(spread*r.NormFloat64())
		}
		out[i] = v
	}
	return out
}

// withApprox lowers the partition size from which inverted files are
// trained, for the test.
func withApprox(t *testing.T, rows int) {
	t.Helper()
	old := approxRows
	approxRows = rows
	t.Cleanup(func() { approxRows = old })
}

// retrain trains sc's inverted file again on all its rows, synchronously,
// so that what a test measures does not depend on when the automatic
// trainings ran.
func retrain(x *Index, sc Scope) {
	x.mu.Lock()
	p := x.parts[sc]
	p.training, p.dirty = true, map[string]bool{}
	x.mu.Unlock()
	x.train(sc, p)
	x.Settle() // the layout the training started
}

func recallAt(x *Index, qs [][]float32, scs []Scope, k int) float64 {
	found, total := 0, 0
	for _, q := range qs {
		want := map[string]bool{}
		for _, h := range x.SearchExact(q, scs, k) {
			want[h.ID] = true
		}
		for _, h := range x.Search(q, scs, k) {
			if want[h.ID] {
				found++
			}
		}
		total += len(want)
	}
	return float64(found) / float64(total)
}

// checkIndex verifies that every row of every trained partition is filed in
// exactly one list, where its bookkeeping says, and that every row of
// every partition is where its id's slot says, and nothing else is.
func checkIndex(t *testing.T, x *Index) {
	t.Helper()
	x.mu.RLock()
	defer x.mu.RUnlock()
	rows, slots := 0, 0
	for tenant, ids := range x.where {
		if len(ids) == 0 {
			t.Fatalf("tenant %q keeps an empty map of slots", tenant)
		}
		slots += len(ids)
	}
	for sc, p := range x.parts {
		// Moving rows (swap-removals, layouts) keeps the ids' slots true.
		for row, id := range p.ids {
			if at := x.where[sc.Tenant][id]; at.p != p || at.row != row {
				t.Fatalf("%v: row %d (%s) is recorded at %p row %d, not %p", sc, row, id, at.p, at.row, p)
			}
		}
		if p.sc != sc {
			t.Fatalf("partition of %v says it is %v", sc, p.sc)
		}
		// Every row's codes are its vector's (codes.go).
		if len(p.codes) != len(p.ids)*x.dim || len(p.rc) != len(p.ids) || len(p.vecs) != len(p.ids)*x.dim {
			t.Fatalf("%v: %d rows, %d floats, %d codes, %d scales", sc, len(p.ids), len(p.vecs), len(p.codes), len(p.rc))
		}
		for row := range p.ids {
			codes, rc := encode(nil, p.vecs[row*x.dim:(row+1)*x.dim])
			if rc != p.rc[row] || !slices.Equal(codes, p.codes[row*x.dim:(row+1)*x.dim]) {
				t.Fatalf("%v: row %d (%s) has codes of another vector", sc, row, p.ids[row])
			}
		}
		rows += len(p.ids)
		f := p.ivf
		if f == nil {
			continue
		}
		if len(f.of) != len(p.ids) || len(f.at) != len(p.ids) {
			t.Fatalf("%v: %d rows, ivf knows %d/%d", sc, len(p.ids), len(f.of), len(f.at))
		}
		seen := make([]bool, len(p.ids))
		for l, lst := range f.lists {
			for a, row := range lst {
				if seen[row] || f.of[row] != int32(l) || f.at[row] != int32(a) {
					t.Fatalf("%v: row %d misfiled (list %d pos %d; of %d at %d; seen %v)", sc, row, l, a, f.of[row], f.at[row], seen[row])
				}
				seen[row] = true
			}
		}
		for row, ok := range seen {
			if !ok {
				t.Fatalf("%v: row %d (%s) in no list", sc, row, p.ids[row])
			}
		}
	}
	if rows != x.n || slots != x.n {
		t.Fatalf("%d rows and %d slots, the index counts %d", rows, slots, x.n)
	}
}

// TestApproximateRecall: on a seeded clustered set, a partition above the
// threshold is ranked by its inverted file, and recall@10 against the
// exact ranking stays at or above 0.95. Partitions below the threshold
// stay exact.
func TestApproximateRecall(t *testing.T) {
	withApprox(t, 2000)
	r := rand.New(rand.NewPCG(17, 1))
	const dim, n = 32, 12_000
	big := Scope{Tenant: "t", Layer: store.LayerCompany, ScopeID: "t"}
	small := Scope{Tenant: "t", Layer: store.LayerUser, ScopeID: "u"}
	x := New()
	// The queries are drawn from the same clusters as the memories.
	vs := clustered(r, n+200, 200, dim, 0.6)
	qs := vs[n:]
	for i, v := range vs[:n] {
		sc := big
		if i%10 == 0 {
			sc = small // 1,200 rows: below the threshold
		}
		if err := x.Put(sc, fmt.Sprintf("m%05d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	x.Settle()
	retrain(x, big)
	x.mu.RLock()
	trained, exact := x.parts[big].ivf != nil, x.parts[small].ivf == nil
	x.mu.RUnlock()
	if !trained || !exact {
		t.Fatalf("big partition trained: %v, small one exact: %v", trained, exact)
	}
	checkIndex(t, x)
	if got := recallAt(x, qs, []Scope{small}, 10); got != 1 {
		t.Errorf("recall of an exact partition = %.3f, want 1", got)
	}
	got := recallAt(x, qs, []Scope{big, small}, 10)
	t.Logf("recall@10 = %.3f", got)
	if got < 0.95 {
		t.Errorf("recall@10 = %.3f, want >= 0.95", got)
	}
}

// TestApproximateWritesStayCorrect replaces, removes and moves memories of
// a partition ranked by its inverted file, while it is being trained again:
// a removed or moved memory is never returned, a replaced one is scored by
// its new vector, every row stays filed in one list, and recall holds.
func TestApproximateWritesStayCorrect(t *testing.T) {
	withApprox(t, 1000)
	r := rand.New(rand.NewPCG(17, 3))
	const dim, n = 16, 4000
	sc := Scope{Tenant: "t", Layer: store.LayerProject, ScopeID: "p"}
	other := Scope{Tenant: "t", Layer: store.LayerUser, ScopeID: "u"}
	vs := clustered(r, 3*n, 50, dim, 0.5)
	live := map[string][]float32{}
	x := New()
	for i := range n {
		id := fmt.Sprintf("m%05d", i)
		if err := x.Put(sc, id, vs[i]); err != nil {
			t.Fatal(err)
		}
		live[id] = vs[i]
	}
	x.Settle()
	gone := map[string]bool{}
	// Writes race a training run: the partition doubles, which starts one.
	for i := n; i < 3*n; i++ {
		id := fmt.Sprintf("m%05d", r.IntN(i))
		switch i % 4 {
		case 0:
			x.Remove("t", id)
			delete(live, id)
			gone[id] = true
		case 1: // replaced by another vector
			if err := x.Put(sc, id, vs[i]); err != nil {
				t.Fatal(err)
			}
			live[id] = vs[i]
			delete(gone, id)
		case 2: // moved to another scope
			if err := x.Put(other, id, vs[i]); err != nil {
				t.Fatal(err)
			}
			delete(live, id)
			gone[id] = true
		default:
			id = fmt.Sprintf("n%05d", i)
			if err := x.Put(sc, id, vs[i]); err != nil {
				t.Fatal(err)
			}
			live[id] = vs[i]
		}
	}
	x.Settle()
	checkIndex(t, x)
	for _, q := range vs[:200] {
		qn, _ := normalised(q)
		for _, h := range x.Search(q, []Scope{sc}, 10) {
			v, ok := live[h.ID]
			if !ok {
				t.Fatalf("%s returned but removed or moved (gone: %v)", h.ID, gone[h.ID])
			}
			vn, _ := normalised(v)
			if c := dot(qn, vn); c != h.Cosine {
				t.Fatalf("%s scored %v, its current vector scores %v", h.ID, h.Cosine, c)
			}
		}
	}
	t.Logf("recall@10 with the lists kept in step = %.3f", recallAt(x, vs[:200], []Scope{sc}, 10))
	// The assertion is on a training of the final rows, which does not
	// depend on when the automatic ones ran.
	retrain(x, sc)
	checkIndex(t, x)
	if got := recallAt(x, vs[:200], []Scope{sc}, 10); got < 0.95 {
		t.Errorf("recall@10 after the writes = %.3f, want >= 0.95", got)
	}
}

// TestTrainingRacesWrites writes, removes and searches from several
// goroutines while inverted files are trained (run with -race).
func TestTrainingRacesWrites(t *testing.T) {
	withApprox(t, 64)
	x := New()
	scs := []Scope{{Tenant: "t", Layer: store.LayerUser, ScopeID: "u"}, {Tenant: "t", Layer: store.LayerTeam, ScopeID: "x"}}
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			r := rand.New(rand.NewPCG(uint64(w), 10))
			for i := range 2000 {
				id := fmt.Sprintf("m%d", r.IntN(600))
				switch i % 4 {
				case 0, 1:
					_ = x.Put(scs[r.IntN(2)], id, randVec(r, 8))
				case 2:
					x.Remove("t", id)
				default:
					x.Search(randVec(r, 8), scs, 5)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	x.Settle()
	checkIndex(t, x)
}

// TestShrunkPartitionIsExactAgain: a partition whose lists were trained
// and that then shrank below the threshold is scanned whole again.
func TestShrunkPartitionIsExactAgain(t *testing.T) {
	withApprox(t, 500)
	r := rand.New(rand.NewPCG(17, 4))
	sc := Scope{Tenant: "t", Layer: store.LayerUser, ScopeID: "u"}
	x := New()
	vs := clustered(r, 2000, 400, 16, 2) // little structure: probing misses
	for i, v := range vs {
		if err := x.Put(sc, fmt.Sprintf("m%05d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	x.Settle()
	for i := range 1700 {
		x.Remove("t", fmt.Sprintf("m%05d", i))
	}
	x.mu.RLock()
	trained := x.parts[sc].ivf != nil
	x.mu.RUnlock()
	if !trained {
		t.Fatal("the partition was never trained")
	}
	checkIndex(t, x)
	if got := recallAt(x, vs[:50], []Scope{sc}, 10); got != 1 {
		t.Errorf("recall of a partition shrunk below the threshold = %.3f, want 1 (exact)", got)
	}
}

// listsContiguous reports whether the rows of every list of sc's inverted
// file are one run of consecutive rows, the lists one after the other.
func listsContiguous(x *Index, sc Scope) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	next := int32(0)
	for _, lst := range x.parts[sc].ivf.lists {
		for _, row := range lst {
			if row != next {
				return false
			}
			next++
		}
	}
	return true
}

// TestLayoutFollowsLists: once trained, and again after appends of an
// eighth of the rows, a partition's rows are in the order of its lists,
// and every id still finds its own vector.
func TestLayoutFollowsLists(t *testing.T) {
	withApprox(t, 1000)
	r := rand.New(rand.NewPCG(17, 5))
	const dim = 16
	sc := Scope{Tenant: "t", Layer: store.LayerProject, ScopeID: "p"}
	vs := clustered(r, 2500+2500/layoutGrowth, 40, dim, 0.5)
	x := New()
	put := func(lo, hi int) {
		t.Helper()
		for i := lo; i < hi; i++ {
			if err := x.Put(sc, fmt.Sprintf("m%05d", i), vs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, 2500)
	x.Settle()
	retrain(x, sc)
	checkIndex(t, x)
	if !listsContiguous(x, sc) {
		t.Fatal("after training, the rows are not in list order")
	}
	// An eighth more rows: filed at the end, then laid out again.
	put(2500, 2500+2500/layoutGrowth-1)
	x.Settle()
	if listsContiguous(x, sc) {
		t.Fatal("rows appended below the layout threshold were laid out (the test proves nothing)")
	}
	put(2500+2500/layoutGrowth-1, 2500+2500/layoutGrowth)
	x.Settle()
	checkIndex(t, x)
	if !listsContiguous(x, sc) {
		t.Fatal("after appending an eighth of the rows, they were not laid out again")
	}
	want := map[string][]float32{}
	for i, v := range vs[:2500+2500/layoutGrowth] {
		want[fmt.Sprintf("m%05d", i)] = v
	}
	checkVectors(t, x, "t", want)
}

// checkVectors fails t unless every id of want finds its own vector
// (normalised) in x under tenant.
func checkVectors(t *testing.T, x *Index, tenant string, want map[string][]float32) {
	t.Helper()
	for id, v := range want {
		got, ok := x.Vector(tenant, id)
		w, _ := normalised(v)
		if !ok || !slices.Equal(got, w) {
			t.Fatalf("%s: its vector moved away from it", id)
		}
	}
}

// TestLayoutBesideWrites: a layout moves rows a chunk at a time while
// writers add, replace and remove vectors and readers search; afterwards
// every structure agrees, every id has its own vector, and a layout run
// with no writes beside it leaves the lists contiguous.
func TestLayoutBesideWrites(t *testing.T) {
	withApprox(t, 1000)
	r := rand.New(rand.NewPCG(3, 9))
	const dim, n = 8, 12_000
	sc := Scope{Tenant: "t", Layer: store.LayerProject, ScopeID: "p"}
	vs := clustered(r, 2*n, 60, dim, 0.5)
	x := New()
	for i := range n {
		if err := x.Put(sc, fmt.Sprintf("m%05d", i), vs[i]); err != nil {
			t.Fatal(err)
		}
	}
	x.Settle()
	want := map[string][]float32{}
	for i := range n {
		want[fmt.Sprintf("m%05d", i)] = vs[i]
	}
	x.mu.Lock()
	x.startLayoutLocked(sc, x.parts[sc]) // runs beside what follows
	x.mu.Unlock()

	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(2)
	go func() { // writer: appends, replacements, removals
		defer wg.Done()
		wr := rand.New(rand.NewPCG(5, 7))
		for i := range 3000 {
			id := fmt.Sprintf("m%05d", wr.IntN(n+i+1))
			v := vs[n+i]
			mu.Lock()
			if wr.IntN(4) == 0 {
				x.Remove("t", id)
				delete(want, id)
			} else if err := x.Put(sc, id, v); err != nil {
				mu.Unlock()
				t.Error(err)
				return
			} else {
				want[id] = v
			}
			mu.Unlock()
		}
	}()
	go func() { // reader
		defer wg.Done()
		for i := range 300 {
			if hits := x.Search(vs[i], []Scope{sc}, 10); len(hits) == 0 {
				t.Error("a search during the layout found nothing")
				return
			}
		}
	}()
	wg.Wait()
	x.Settle()
	checkIndex(t, x)
	checkVectors(t, x, "t", want)
	x.mu.Lock()
	x.startLayoutLocked(sc, x.parts[sc])
	x.mu.Unlock()
	x.Settle()
	checkIndex(t, x)
	if !listsContiguous(x, sc) {
		t.Fatal("a layout with no writes beside it left rows out of list order")
	}
}
