package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ten := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	tests := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{name: "empty", sorted: nil, q: 0.5, want: 0},
		{name: "one", sorted: []time.Duration{7}, q: 0.99, want: 7},
		{name: "median of ten", sorted: ten, q: 0.5, want: 5},
		{name: "p95 of ten", sorted: ten, q: 0.95, want: 10},
		{name: "p90 of ten", sorted: ten, q: 0.9, want: 9},
		{name: "max", sorted: ten, q: 1, want: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.q); got != tt.want {
				t.Errorf("Percentile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func pts(rows ...[3]float64) []Point {
	var out []Point
	for _, r := range rows {
		out = append(out, Point{Concurrency: int(r[0]), RPS: r[1], P99Ms: r[2], P95Ms: r[2] / 2, Requests: 100})
	}
	return out
}

func TestKnee(t *testing.T) {
	tests := []struct {
		name   string
		points []Point
		want   int
	}{
		{name: "too few", points: pts([3]float64{1, 100, 1}), want: 0},
		{name: "keeps growing", points: pts([3]float64{1, 100, 1}, [3]float64{8, 700, 2}, [3]float64{64, 2000, 10}), want: 0},
		{name: "flattens with rising p99", points: pts([3]float64{1, 100, 1}, [3]float64{8, 700, 2}, [3]float64{64, 720, 40}), want: 8},
		{name: "flat but p99 falls is no knee", points: pts([3]float64{1, 100, 5}, [3]float64{8, 105, 4}), want: 0},
		{name: "first flattening wins", points: pts([3]float64{1, 100, 1}, [3]float64{2, 105, 2}, [3]float64{4, 300, 3}), want: 1},
		{name: "exactly ten percent is growth", points: pts([3]float64{1, 100, 1}, [3]float64{2, 110, 2}), want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Knee(tt.points); got != tt.want {
				t.Errorf("Knee = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestRecommend(t *testing.T) {
	curve := pts([3]float64{1, 100, 2}, [3]float64{8, 700, 8}, [3]float64{64, 900, 60})
	withErrors := pts([3]float64{1, 100, 2}, [3]float64{8, 700, 8})
	withErrors[1].Errors = 1
	tests := []struct {
		name         string
		points       []Point
		slo          SLO
		want         int
		wantFeasible []int
	}{
		{name: "no SLO takes the fastest", points: curve, want: 64, wantFeasible: []int{1, 8, 64}},
		{name: "p99 cuts the tail", points: curve, slo: SLO{P99Ms: 10}, want: 8, wantFeasible: []int{1, 8}},
		{name: "p95 alone", points: curve, slo: SLO{P95Ms: 5}, want: 8, wantFeasible: []int{1, 8}},
		{name: "nothing fits", points: curve, slo: SLO{P99Ms: 1}, want: 0, wantFeasible: nil},
		{name: "errors disqualify", points: withErrors, want: 1, wantFeasible: []int{1}},
		{name: "tolerated errors", points: withErrors, slo: SLO{MaxErrorRate: 0.05}, want: 8, wantFeasible: []int{1, 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, feasible := Recommend(tt.points, tt.slo)
			if got != tt.want || !equalInts(feasible, tt.wantFeasible) {
				t.Errorf("Recommend = %d %v, want %d %v", got, feasible, tt.want, tt.wantFeasible)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPlanComplete(t *testing.T) {
	tests := []struct {
		name    string
		plan    Plan
		wantErr bool
	}{
		{name: "defaults", plan: Plan{Concurrency: []int{1}}},
		{name: "no levels", plan: Plan{}, wantErr: true},
		{name: "zero concurrency", plan: Plan{Concurrency: []int{0}}, wantErr: true},
		{name: "too much concurrency", plan: Plan{Concurrency: []int{MaxConcurrency + 1}}, wantErr: true},
		{name: "endless", plan: Plan{Concurrency: []int{1}, Duration: time.Hour}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.plan.Complete()
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrPlan) {
				t.Errorf("err %v is not ErrPlan", err)
			}
			if err == nil && (tt.plan.Duration != 5*time.Second || tt.plan.MaxRequests == 0) {
				t.Errorf("defaults not applied: %+v", tt.plan)
			}
		})
	}
}

// sleeper is a target with a fixed service time that fails every nth call.
// It spends spin of that time on the CPU, so that the process CPU the run
// reads from /proc (in clock ticks of 10 ms) is never zero.
type sleeper struct {
	d     time.Duration
	spin  time.Duration
	nth   int64
	calls atomic.Int64
	// busy is the most workers seen inside Call at once.
	inside, busy atomic.Int64
}

func (s *sleeper) Call(ctx context.Context, _ int) string {
	n := s.calls.Add(1)
	in := s.inside.Add(1)
	defer s.inside.Add(-1)
	for b := s.busy.Load(); in > b && !s.busy.CompareAndSwap(b, in); b = s.busy.Load() {
	}
	for start := time.Now(); time.Since(start) < s.spin; {
	}
	select {
	case <-time.After(s.d - s.spin):
	case <-ctx.Done():
		return "deadline"
	}
	if s.nth > 0 && n%s.nth == 0 {
		return "UNAVAILABLE"
	}
	return ""
}

func TestRunMeasuresAClosedLoop(t *testing.T) {
	target := &sleeper{d: 2 * time.Millisecond, spin: 500 * time.Microsecond, nth: 10}
	points, err := Run(t.Context(), target, Plan{
		Concurrency: []int{1, 4}, Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond, PID: os.Getpid(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 2 {
		t.Fatalf("%d points, want 2", len(points))
	}
	one, four := points[0], points[1]
	if one.P50Ms < 2 || one.P50Ms > 50 {
		t.Errorf("p50 %.3fms with a 2ms service time", one.P50Ms)
	}
	if !(one.P50Ms <= one.P95Ms && one.P95Ms <= one.P99Ms && one.P99Ms <= one.MaxMs) {
		t.Errorf("percentiles out of order: %+v", one)
	}
	// Four workers on a 2ms sleep should do far more than one (not 4x on a
	// busy CI machine, but clearly more).
	if four.RPS < 2*one.RPS {
		t.Errorf("rps at 4 = %.0f, at 1 = %.0f: no concurrency", four.RPS, one.RPS)
	}
	if target.busy.Load() != 4 {
		t.Errorf("at most %d workers were inside at once, want 4", target.busy.Load())
	}
	for _, p := range points {
		want := p.Requests / 10
		if got := p.ErrorsByCode["UNAVAILABLE"]; got < want-5 || got > want+5 || p.Errors != got {
			t.Errorf("concurrency %d: %d errors of %d calls, want about %d", p.Concurrency, got, p.Requests, want)
		}
		if p.ServerCPUPerRequestUs <= 0 || p.PeakRSSBytes <= 0 {
			t.Errorf("no process figures for our own pid: %+v", p)
		}
	}
}

func TestRunIsBoundedByTheBudget(t *testing.T) {
	target := &sleeper{}
	start := time.Now()
	points, err := Run(t.Context(), target, Plan{Concurrency: []int{8}, Duration: 5 * time.Second, Warmup: -1, MaxRequests: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if points[0].Requests != 1000 || target.calls.Load() != 1000 {
		t.Errorf("requests %d, calls %d; want exactly the budget of 1000", points[0].Requests, target.calls.Load())
	}
	if time.Since(start) > 4*time.Second {
		t.Errorf("took %v: the budget did not end the point", time.Since(start))
	}
}

func TestRunStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Run(ctx, &sleeper{d: time.Millisecond}, Plan{Concurrency: []int{1, 2, 4}, Duration: 3 * time.Second, Warmup: -1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("took %v after the context ended", time.Since(start))
	}
}

func TestRunTimesOutSlowCalls(t *testing.T) {
	points, err := Run(t.Context(), &sleeper{d: time.Hour}, Plan{Concurrency: []int{2}, Duration: 50 * time.Millisecond, Warmup: -1, Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if p := points[0]; p.Errors != p.Requests || p.ErrorsByCode["deadline"] != p.Requests || p.Requests == 0 {
		t.Errorf("every call should have timed out: %+v", p)
	}
}

func TestProgressDrawsOnlyWhenAsked(t *testing.T) {
	tests := []struct {
		name string
		w    *bytes.Buffer
	}{
		{name: "terminal", w: &bytes.Buffer{}},
		{name: "no terminal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := Plan{Concurrency: []int{1}, Duration: 450 * time.Millisecond, Warmup: -1, Label: "demo"}
			if tt.w != nil {
				plan.Progress = tt.w
			}
			if _, err := Run(t.Context(), &sleeper{d: time.Millisecond}, plan); err != nil {
				t.Fatal(err)
			}
			if tt.w != nil && !strings.Contains(tt.w.String(), "demo [#") {
				t.Errorf("no bar drawn: %q", tt.w.String())
			}
		})
	}
}

func TestReports(t *testing.T) {
	s := &Sweep{Name: "bare grpc-go", Transport: "grpc", Tool: "Echo", SLO: SLO{P99Ms: 10},
		Points: pts([3]float64{1, 100, 2}, [3]float64{8, 700, 8}, [3]float64{64, 720, 60})}
	s.Points[2].Errors, s.Points[2].ErrorsByCode = 3, map[string]int{"UNAVAILABLE": 2, "deadline": 1}
	s.Analyze()
	if s.Knee != 8 || s.Recommended != 8 {
		t.Fatalf("knee %d, recommended %d; want 8, 8", s.Knee, s.Recommended)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, []*Sweep{s}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| bare grpc-go | Echo | 64 | 720 |", "3 (UNAVAILABLE×2, deadline×1)", "| bare grpc-go | 8 | 8 | 1, 8 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	var back Sweep
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Recommended != 8 || len(back.Points) != 3 || back.Points[2].ErrorsByCode["UNAVAILABLE"] != 2 {
		t.Errorf("JSON round trip lost data: %+v", back)
	}
	if p, ok := s.At(8); !ok || p.RPS != 700 {
		t.Errorf("At(8) = %+v, %v", p, ok)
	}
}

// TestRunInterleavedTakesTurns measures two targets in three rounds: each
// gets about the whole duration, its own counts and errors, and their
// calls alternate in time (A's calls fall in at least two separate
// stretches with B's in between).
func TestRunInterleavedTakesTurns(t *testing.T) {
	var mu sync.Mutex
	var order []string // who was called, in call order, deduplicated runs
	call := func(name, code string) Target {
		return TargetFunc(func(context.Context, int) string {
			time.Sleep(time.Millisecond)
			mu.Lock()
			if len(order) == 0 || order[len(order)-1] != name {
				order = append(order, name)
			}
			mu.Unlock()
			return code
		})
	}
	plan := Plan{Concurrency: []int{1, 2}, Duration: 300 * time.Millisecond, Warmup: -1}
	got, err := RunInterleaved(t.Context(), []Target{call("a", ""), call("b", "UNAVAILABLE")}, []Plan{plan, plan}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0]) != 2 || len(got[1]) != 2 {
		t.Fatalf("points: %+v", got)
	}
	for i, ps := range got {
		for _, p := range ps {
			if p.Seconds < 0.25 || p.Seconds > 0.6 || p.Requests == 0 {
				t.Errorf("target %d at %d: %d calls in %.3fs, want about 0.3s of calls", i, p.Concurrency, p.Requests, p.Seconds)
			}
		}
	}
	if got[0][0].Errors != 0 || got[1][0].Errors != got[1][0].Requests || got[1][0].ErrorsByCode["UNAVAILABLE"] == 0 {
		t.Errorf("errors mixed up between targets: a %+v, b %+v", got[0][0], got[1][0])
	}
	// Two levels × three rounds × two targets, b then a on odd rounds.
	if len(order) < 8 {
		t.Errorf("calls did not alternate: %v", order)
	}
	if _, err := RunInterleaved(t.Context(), []Target{call("a", "")}, []Plan{plan, plan}, 3); !errors.Is(err, ErrPlan) {
		t.Errorf("mismatched targets and plans: err = %v, want ErrPlan", err)
	}
	other := plan
	other.Duration = time.Second
	if _, err := RunInterleaved(t.Context(), []Target{call("a", ""), call("b", "")}, []Plan{plan, other}, 3); !errors.Is(err, ErrPlan) {
		t.Errorf("plans of different durations: err = %v, want ErrPlan", err)
	}
}
