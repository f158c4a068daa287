package load

// KneeGrowth is the throughput growth below which more concurrency is
// considered to buy nothing: 10%.
const KneeGrowth = 0.10

// Knee returns the concurrency at the knee of points (ordered by rising
// concurrency): the last level before the first step where throughput grew
// by less than KneeGrowth while p99 latency grew. Past the knee, more
// concurrency only queues. It returns 0 when throughput kept growing (no
// knee within the measured range) or there are fewer than two points.
func Knee(points []Point) int {
	for i := 1; i < len(points); i++ {
		prev, cur := points[i-1], points[i]
		if cur.RPS-prev.RPS < KneeGrowth*prev.RPS && cur.P99Ms > prev.P99Ms {
			return prev.Concurrency
		}
	}
	return 0
}

// SLO is a latency objective; a zero field is not checked.
type SLO struct {
	P95Ms float64 `json:"p95Ms,omitempty"`
	P99Ms float64 `json:"p99Ms,omitempty"`
	// MaxErrorRate is the largest acceptable fraction of failed calls.
	// Default 0: a point with any error is infeasible.
	MaxErrorRate float64 `json:"maxErrorRate,omitempty"`
}

// Meets reports whether p is within the SLO.
func (s SLO) Meets(p Point) bool {
	if p.Requests == 0 || p.ErrorRate() > s.MaxErrorRate {
		return false
	}
	if s.P95Ms > 0 && p.P95Ms > s.P95Ms {
		return false
	}
	return s.P99Ms <= 0 || p.P99Ms <= s.P99Ms
}

// Recommend returns the concurrency with the highest throughput among the
// points that meet slo (the lower concurrency on a tie, as it queues less),
// and every feasible concurrency. recommended is 0 when none meets it.
func Recommend(points []Point, slo SLO) (recommended int, feasible []int) {
	best := -1.0
	for _, p := range points {
		if !slo.Meets(p) {
			continue
		}
		feasible = append(feasible, p.Concurrency)
		if p.RPS > best || (p.RPS == best && p.Concurrency < recommended) {
			best, recommended = p.RPS, p.Concurrency
		}
	}
	return recommended, feasible
}
