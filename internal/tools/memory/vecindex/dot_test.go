package vecindex

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDot checks both inner products against a float64 sum, at every
// length around the assembly's 32- and 8-float steps, on slices that start
// at odd offsets (unaligned loads). GODEBUG=cpu.avx2=off runs this
// package's tests on the portable one.
func TestDot(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := range 80 {
		buf := randVec(r, 2*n+3)
		a, b := buf[1:n+1], buf[n+2:2*n+2]
		b = append(b, 99) // longer than a: the extra float is not read
		var want float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
		}
		tol := 1e-5 * (1 + float64(n))
		if got := dotGo(a, b); math.Abs(got-want) > tol {
			t.Errorf("dotGo at length %d = %v, want %v", n, got, want)
		}
		if !haveFMA {
			continue
		}
		if got := float64(dotFMA(a, b)); math.Abs(got-want) > tol {
			t.Errorf("dotFMA at length %d = %v, want %v", n, got, want)
		}
	}
	if !haveFMA {
		t.Log("no AVX2 and FMA on this CPU: only the portable inner product was checked")
	}
}

// BenchmarkDot is one 256-dimension inner product, as a search scores a
// row.
func BenchmarkDot(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	x, y := randVec(r, 256), randVec(r, 256)
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			dotSink += dotGo(x, y)
		}
	})
	if haveFMA {
		b.Run("fma", func(b *testing.B) {
			for b.Loop() {
				dotSink += float64(dotFMA(x, y))
			}
		})
	}
}

// dotSink keeps the benchmarked products from being optimised away.
var dotSink float64
