package vecindex

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

func randVec(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// TestSearchIsExactAndScoped compares Search with a brute-force ranking
// over exactly the requested scopes, with partitions large enough to be
// scanned in parallel.
func TestSearchIsExactAndScoped(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const dim = 16
	defer func(n int) { parallelRows = n }(parallelRows)
	parallelRows = 1000
	x := New()
	scopes := []Scope{
		{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1"},
		{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u2"},
		{Tenant: "t2", Layer: store.LayerUser, ScopeID: "u1"},
		{Tenant: "t1", Layer: store.LayerCompany, ScopeID: "t1"},
	}
	all := map[Scope]map[string][]float32{}
	for i := range 3 * parallelRows {
		sc := scopes[i%len(scopes)]
		if i%7 == 0 {
			sc = scopes[3] // a big partition, scanned in parallel
		}
		id := fmt.Sprintf("mem_%06d", i)
		v := randVec(r, dim)
		if err := x.Put(sc, id, v); err != nil {
			t.Fatal(err)
		}
		if all[sc] == nil {
			all[sc] = map[string][]float32{}
		}
		all[sc][id] = v
	}
	// Replacing and removing keep the index in step.
	for id := range all[scopes[0]] {
		v := randVec(r, dim)
		if err := x.Put(scopes[0], id, v); err != nil {
			t.Fatal(err)
		}
		all[scopes[0]][id] = v
		break
	}
	for id := range all[scopes[1]] {
		x.Remove("t1", id)
		delete(all[scopes[1]], id)
		break
	}
	want := func(q []float32, scs []Scope, k int) []Hit {
		qn, _ := normalised(q)
		var hs []Hit
		for _, sc := range scs {
			for id, v := range all[sc] {
				vn, _ := normalised(v)
				hs = append(hs, Hit{ID: id, Cosine: dot(qn, vn)})
			}
		}
		slices.SortFunc(hs, func(a, b Hit) int { return cmp.Or(cmp.Compare(b.Cosine, a.Cosine), cmp.Compare(a.ID, b.ID)) })
		return hs[:min(k, len(hs))]
	}
	for trial := range 20 {
		q := randVec(r, dim)
		scs := []Scope{scopes[trial%2], scopes[3]}
		got := x.Search(q, scs, 10)
		if w := want(q, scs, 10); !slices.EqualFunc(got, w, func(a, b Hit) bool { return a.ID == b.ID }) {
			t.Fatalf("trial %d: Search = %v, want %v", trial, got, w)
		}
		for _, h := range got {
			if _, ok := all[scopes[2]][h.ID]; ok {
				t.Fatalf("another tenant's memory %s returned", h.ID)
			}
		}
	}
	if got := x.Search(randVec(r, dim), []Scope{{Tenant: "t3", Layer: store.LayerUser, ScopeID: "u1"}}, 5); len(got) != 0 {
		t.Errorf("an unknown scope returned %v", got)
	}
}

func TestPutRules(t *testing.T) {
	x := New()
	sc := Scope{Tenant: "t", Layer: store.LayerUser, ScopeID: "u"}
	if err := x.Put(sc, "a", []float32{1, 0}); err != nil {
		t.Fatal(err)
	}
	if err := x.Put(sc, "b", []float32{1, 0, 0}); !errors.Is(err, ErrDimension) {
		t.Errorf("Put of another dimension: %v, want ErrDimension", err)
	}
	if err := x.Put(sc, "z", []float32{0, 0}); err != nil || x.Len() != 1 {
		t.Errorf("a zero vector: err %v, Len %d; want it left out", err, x.Len())
	}
	if got := x.Search([]float32{1, 0, 0}, []Scope{sc}, 3); got != nil {
		t.Errorf("a query of another dimension matched %v", got)
	}
	// Moving a memory to another scope removes it from the first.
	sc2 := Scope{Tenant: "t", Layer: store.LayerTeam, ScopeID: "x"}
	if err := x.Put(sc2, "a", []float32{0, 1}); err != nil {
		t.Fatal(err)
	}
	if got := x.Search([]float32{1, 0}, []Scope{sc}, 3); len(got) != 0 {
		t.Errorf("the old scope still holds %v", got)
	}
	if v, ok := x.Vector("t", "a"); !ok || v[1] != 1 {
		t.Errorf("Vector = %v, %v", v, ok)
	}
	if err := x.Put(sc, "c", []float32{0, 2}); err != nil {
		t.Fatal(err)
	}
	var visited []string
	x.Visit("t", []string{"a", "missing", "c"}, func(i int, v []float32) {
		visited = append(visited, fmt.Sprint(i, v))
	})
	// Stored normalised, each wherever its scope put it.
	if want := []string{"0 [0 1]", "2 [0 1]"}; !slices.Equal(visited, want) {
		t.Errorf("Visit saw %q, want %q", visited, want)
	}
	// Another tenant's memory of the same id is another memory.
	other := Scope{Tenant: "t2", Layer: store.LayerUser, ScopeID: "u"}
	if err := x.Put(other, "a", []float32{3, 0}); err != nil {
		t.Fatal(err)
	}
	checkIndex(t, x)
	if v, ok := x.Vector("t", "a"); !ok || v[1] != 1 {
		t.Errorf("t's a after t2 wrote its a: %v, %v", v, ok)
	}
	x.Remove("t2", "a")
	if v, ok := x.Vector("t", "a"); !ok || v[1] != 1 || x.Len() != 2 {
		t.Errorf("t's a after t2 removed its a: %v, %v (Len %d)", v, ok, x.Len())
	}
	if _, ok := x.Vector("t2", "a"); ok {
		t.Error("t2's a is still indexed")
	}
	checkIndex(t, x)
	x.Remove("t", "c")
	x.Remove("t", "a")
	checkIndex(t, x)
	if x.Len() != 0 || x.Dim() != 0 {
		t.Errorf("after removing the last vector: Len %d, Dim %d", x.Len(), x.Dim())
	}
}

// BenchmarkSearch is one caller's nearest-neighbour query (k=50) when all
// n memories of the store sit in the scopes it can see (the worst case: a
// company layer holding everything, so both partitions are above the
// threshold and ranked by their inverted files), 256 dimensions as
// potion-base-8M. The vectors are clustered (500 centres, noise as large
// as a centre), queries drawn from the same clusters. It reports p50/p99,
// recall@50 against the exact ranking, the heap the index holds (heap-MB)
// and the time to load and train it (build-s).
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			const dim = 256
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			x := New()
			scs := []Scope{{Tenant: "t", Layer: store.LayerUser, ScopeID: "u"}, {Tenant: "t", Layer: store.LayerCompany, ScopeID: "t"}}
			vs := clusteredStream(r, 500, dim, 1.0)
			for i := range n {
				_ = x.Put(scs[i%2], fmt.Sprintf("mem_%08d", i), vs())
			}
			x.Settle()
			build := time.Since(start)
			runtime.GC()
			runtime.ReadMemStats(&after)
			qs := make([][]float32, 64)
			for i := range qs {
				qs[i] = vs()
			}
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				x.Search(qs[i%len(qs)], scs, 50)
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(recallAt(x, qs[:16], scs, 50), "recall@50")
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MB")
			b.ReportMetric(build.Seconds(), "build-s")
			runtime.KeepAlive(x)
		})
	}
}

// clusteredStream is clustered one vector at a time, so that a benchmark
// does not hold a second copy of a million vectors.
func clusteredStream(r *rand.Rand, nc, dim int, spread float64) func() []float32 {
	centres := make([][]float32, nc)
	for i := range centres {
		centres[i] = randVec(r, dim)
	}
	return func() []float32 {
		c := centres[r.IntN(nc)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + float32(spread*r.NormFloat64())
		}
		return v
	}
}

// TestConcurrentUse writes, removes and searches from several goroutines
// (run with -race).
func TestConcurrentUse(t *testing.T) {
	x := New()
	// Two tenants, the first with two scopes that a memory moves between.
	scopes := []Scope{
		{Tenant: "t", Layer: store.LayerUser, ScopeID: "u"},
		{Tenant: "t", Layer: store.LayerProject, ScopeID: "p"},
		{Tenant: "t2", Layer: store.LayerUser, ScopeID: "u"},
	}
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for i := range 500 {
				id := fmt.Sprintf("m%d", r.IntN(100))
				sc := scopes[r.IntN(len(scopes))]
				switch i % 3 {
				case 0:
					_ = x.Put(sc, id, randVec(r, 8))
				case 1:
					x.Remove(sc.Tenant, id)
				default:
					for _, h := range x.Search(randVec(r, 8), []Scope{sc}, 5) {
						if h.Cosine < -1.0001 || h.Cosine > 1.0001 {
							t.Errorf("cosine %v out of range", h.Cosine)
						}
					}
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	if n := x.Len(); n > 200 {
		t.Errorf("Len = %d, more than the 200 ids written", n)
	}
	checkIndex(t, x)
}
