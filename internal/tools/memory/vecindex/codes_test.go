package vecindex

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
)

// TestCodesBound checks the bound in float64: for unit rows of several
// shapes (dense, one large component, a few, all equal, tiny and large
// dimensions) and unit queries of the same shapes, the cosine is within
// the bound's margin of the codes' product, on both sides.
func TestCodesBound(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	shapes := map[string]func(dim int) []float32{
		"dense": func(dim int) []float32 { return randVec(r, dim) },
		"spike": func(dim int) []float32 {
			v := randVec(r, dim)
			v[r.IntN(dim)] = 40
			return v
		},
		"sparse": func(dim int) []float32 {
			v := make([]float32, dim)
			for range 3 {
				v[r.IntN(dim)] = float32(r.NormFloat64())
			}
			v[0] += 0.5
			return v
		},
		"flat": func(dim int) []float32 {
			v := make([]float32, dim)
			for i := range v {
				v[i] = 1
			}
			return v
		},
	}
	names := []string{"dense", "spike", "sparse", "flat"}
	for _, name := range names {
		for _, dim := range []int{1, 3, 16, 256, 257, 1536} {
			for range 20 {
				v, ok := normalised(shapes[name](dim))
				if !ok {
					continue
				}
				codes, rc := encode(nil, v)
				if len(codes) != dim {
					t.Fatalf("%s/%d: %d codes", name, dim, len(codes))
				}
				for _, qname := range names {
					q, _ := normalised(shapes[qname](dim))
					qc := encodeQuery(q)
					var exact float64
					for i := range q {
						exact += float64(q[i]) * float64(v[i])
					}
					upper := qc.bound(codes, rc)
					approx := float64(dotCodes(qc.codes, codes)) * qc.scale * float64(rc.scale)
					if exact > upper || exact < 2*approx-upper {
						t.Fatalf("%s row, %s query, %d dims: cosine %v outside %v ± %v", name, qname, dim, exact, approx, upper-approx)
					}
				}
			}
		}
	}
}

// TestDotCodes checks both products of codes against an int64 sum, at
// every length around the assembly's 32-code step, on slices at odd
// offsets, with random codes and with the largest ones encodeQuery makes
// (the sum must not overflow).
func TestDotCodes(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	lengths := []int{256, 512, 1536, 4096}
	for n := range 100 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		ones := make([]float32, n)
		for i := range ones {
			ones[i] = 1
		}
		qn, _ := normalised(ones)
		largest := encodeQuery(qn).codes
		for _, extreme := range []bool{false, true} {
			a := make([]int16, n+1)[1:]
			c := make([]int8, n+2)[1 : n+1]
			for i := range a {
				a[i], c[i] = int16(r.IntN(65535)-32767), int8(r.IntN(255)-127)
				if extreme {
					a[i], c[i] = largest[i], -127
				}
			}
			if extreme && n > 0 && int(a[0]) > math.MaxInt32/(127*n) {
				t.Fatalf("length %d: a code of %d could overflow", n, a[0])
			}
			var want int64
			for i := range a {
				want += int64(a[i]) * int64(c[i])
			}
			if want != int64(int32(want)) {
				if extreme {
					t.Fatalf("length %d: the largest codes sum to %d, beyond an int32", n, want)
				}
				continue
			}
			if got := dotCodesGo(a, c); int64(got) != want {
				t.Errorf("dotCodesGo at length %d = %d, want %d", n, got, want)
			}
			if got := dotCodes(a, c); int64(got) != want {
				t.Errorf("dotCodes at length %d = %d, want %d", n, got, want)
			}
		}
	}
}

// TestCodesSkipOnlyLosers: with the codes, Search returns exactly what
// scoring every row returns (ids, order and cosines), on clustered rows
// whose best scores lie close together, with duplicate rows (tied
// cosines), whole scans and an inverted file; and the bound is tight
// enough to matter: most rows of a scan are ruled out by their codes.
func TestCodesSkipOnlyLosers(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	const dim, n, k = 64, 6000, 50
	withApprox(t, 4000)
	small := Scope{Tenant: "t", Layer: store.LayerUser, ScopeID: "u"}
	big := Scope{Tenant: "t", Layer: store.LayerCompany, ScopeID: "t"}
	x := New()
	vs := clusteredStream(r, 40, dim, 0.3)
	rows := map[Scope]map[string][]float32{small: {}, big: {}}
	for i := range n {
		sc := small
		if i%3 != 0 {
			sc = big
		}
		v := vs()
		if i%10 == 9 {
			v = rows[sc][fmt.Sprintf("m%05d", i-9)] // a duplicate: tied cosines
			if v == nil {
				v = vs()
			}
		}
		id := fmt.Sprintf("m%05d", i)
		if err := x.Put(sc, id, v); err != nil {
			t.Fatal(err)
		}
		rows[sc][id] = v
	}
	x.Settle()
	checkIndex(t, x)
	// Every row scored: the reference, in the index's own arithmetic.
	all := func(q []float32, sc Scope) []Hit {
		qn, _ := normalised(q)
		var hs []Hit
		for id, v := range rows[sc] {
			vn, _ := normalised(v)
			hs = append(hs, Hit{ID: id, Cosine: dot(qn, vn)})
		}
		slices.SortFunc(hs, func(a, b Hit) int { return cmp.Or(cmp.Compare(b.Cosine, a.Cosine), cmp.Compare(a.ID, b.ID)) })
		return hs
	}
	ruledOut, scanned := 0, 0
	for trial := range 40 {
		q := vs()
		want := all(q, small)
		if got := x.Search(q, []Scope{small}, k); !slices.Equal(got, want[:k]) {
			t.Fatalf("trial %d: whole scan with codes = %v, want %v", trial, got, want[:k])
		}
		if got, exact := x.Search(q, []Scope{big}, k), x.SearchExact(q, []Scope{big}, k); !slices.Equal(exact, all(q, big)[:k]) {
			t.Fatalf("trial %d: SearchExact = %v, want every row's best", trial, exact)
		} else {
			// The inverted file may miss a near neighbour; what it returns
			// is scored exactly.
			for _, h := range got {
				vn, _ := normalised(rows[big][h.ID])
				qn, _ := normalised(q)
				if h.Cosine != dot(qn, vn) {
					t.Fatalf("trial %d: %s scored %v, not %v", trial, h.ID, h.Cosine, dot(qn, vn))
				}
			}
		}
		// How many rows a full top rules out: their bound is below the
		// k-th best.
		qn, _ := normalised(q)
		qc := encodeQuery(qn)
		worst := want[k-1].Cosine
		for _, v := range rows[small] {
			vn, _ := normalised(v)
			codes, rc := encode(nil, vn)
			if qc.bound(codes, rc) < worst {
				ruledOut++
			}
			scanned++
		}
	}
	if share := float64(ruledOut) / float64(scanned); share < 0.8 {
		t.Errorf("the codes rule out %.2f of the rows against the final top, want at least 0.8", share)
	}
}
