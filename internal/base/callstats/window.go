package callstats

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// windowCap bounds the latencies kept per interval; beyond it a uniform
// reservoir sample stands for all calls.
const windowCap = 1 << 14

// Window collects the call latencies of one interval of the periodic
// pressure line (docs/OPERATIONS.md, Watch); the zero value is ready.
type Window struct {
	mu      sync.Mutex
	samples []float64 // milliseconds
	calls   uint64
	errors  uint64
	max     float64
}

// Record adds one call of d, failed or not.
func (w *Window) Record(d time.Duration, failed bool) {
	ms := float64(d.Microseconds()) / 1000
	w.mu.Lock()
	w.calls++
	if failed {
		w.errors++
	}
	if ms > w.max {
		w.max = ms
	}
	if len(w.samples) < windowCap {
		w.samples = append(w.samples, ms)
	} else if i := rand.Uint64N(w.calls); i < windowCap {
		w.samples[i] = ms
	}
	w.mu.Unlock()
}

// WindowStats are the calls of one interval.
type WindowStats struct {
	Calls, Errors              uint64
	P50Ms, P95Ms, P99Ms, MaxMs float64
}

// Take returns the calls since the last Take and starts a new interval.
func (w *Window) Take() WindowStats {
	w.mu.Lock()
	samples, st := w.samples, WindowStats{Calls: w.calls, Errors: w.errors, MaxMs: w.max}
	w.samples, w.calls, w.errors, w.max = nil, 0, 0, 0
	w.mu.Unlock()
	if len(samples) == 0 {
		return st
	}
	slices.Sort(samples)
	st.P50Ms, st.P95Ms, st.P99Ms = quantile(samples, 0.50), quantile(samples, 0.95), quantile(samples, 0.99)
	return st
}

// quantile is the nearest-rank quantile of sorted samples.
func quantile(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
