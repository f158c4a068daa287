package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsvc/toolsvc/bench/internal/procstat"
)

// Target is what a sweep calls. Implementations must be safe for
// concurrent use by the workers.
type Target interface {
	// Call performs one request on behalf of worker (0..concurrency-1)
	// and returns "" on success or a short error code (a gRPC code, an
	// HTTP status, "tool_error", "transport", ...).
	Call(ctx context.Context, worker int) string
}

// TargetFunc adapts a function to Target.
type TargetFunc func(ctx context.Context, worker int) string

// Call calls f.
func (f TargetFunc) Call(ctx context.Context, worker int) string { return f(ctx, worker) }

// Plan describes a sweep. Zero fields take the defaults named below.
type Plan struct {
	// Concurrency lists the levels to measure, in order; required.
	Concurrency []int
	// Duration is how long each level is measured. Default 5s.
	Duration time.Duration
	// Warmup runs before each level's measurement, unrecorded. Default 1s;
	// negative disables it.
	Warmup time.Duration
	// Timeout bounds every call. Default 5s.
	Timeout time.Duration
	// MaxRequests bounds the calls of one measurement. Default 5,000,000.
	MaxRequests int64
	// PID is a local server process to charge CPU and RSS to; 0 skips it.
	PID int
	// ProcRoot is where /proc is mounted. Default "/proc".
	ProcRoot string
	// Progress, when set, receives a progress bar (use only for a terminal).
	Progress io.Writer
	// Label names the sweep on the progress bar.
	Label string
}

// Plan bounds accepted by Complete.
const (
	MaxConcurrency = 4096
	MaxDuration    = 10 * time.Minute
)

// ErrPlan is wrapped by every error about an invalid Plan.
var ErrPlan = errors.New("load: invalid plan")

// Complete fills defaults and validates p.
func (p *Plan) Complete() error {
	if len(p.Concurrency) == 0 {
		return fmt.Errorf("%w: no concurrency levels", ErrPlan)
	}
	for _, c := range p.Concurrency {
		if c < 1 || c > MaxConcurrency {
			return fmt.Errorf("%w: concurrency %d outside 1..%d", ErrPlan, c, MaxConcurrency)
		}
	}
	if p.Duration == 0 {
		p.Duration = 5 * time.Second
	}
	if p.Warmup == 0 {
		p.Warmup = time.Second
	}
	if p.Timeout == 0 {
		p.Timeout = 5 * time.Second
	}
	if p.MaxRequests == 0 {
		p.MaxRequests = 5_000_000
	}
	if p.ProcRoot == "" {
		p.ProcRoot = "/proc"
	}
	if p.Duration < 0 || p.Duration > MaxDuration || p.Warmup > MaxDuration || p.Timeout < 0 || p.MaxRequests < 0 {
		return fmt.Errorf("%w: durations must be within 0..%s and the budget positive", ErrPlan, MaxDuration)
	}
	return nil
}

// Point is the measurement of one concurrency level.
type Point struct {
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requests"`
	Seconds     float64 `json:"seconds"`
	RPS         float64 `json:"rps"`
	// Latencies of every call, successful or not, in milliseconds.
	P50Ms  float64 `json:"p50Ms"`
	P95Ms  float64 `json:"p95Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MaxMs  float64 `json:"maxMs"`
	Errors int     `json:"errors"`
	// ErrorsByCode counts failed calls by the code the target returned.
	ErrorsByCode map[string]int `json:"errorsByCode"`
	// ServerCPUPerRequestUs is the server's CPU time (user+system) during
	// the measurement divided by the calls; 0 without a PID.
	ServerCPUPerRequestUs float64 `json:"serverCpuPerRequestUs"`
	// ServerCPUUtilization is server CPU seconds per wall second (1.0 is
	// one core busy); 0 without a PID.
	ServerCPUUtilization float64 `json:"serverCpuUtilization"`
	// PeakRSSBytes is the largest resident set sampled during the point
	// (and at least the process's high-water mark so far); 0 without a PID.
	PeakRSSBytes int64 `json:"peakRssBytes"`
}

// ErrorRate is the fraction of calls that failed.
func (p Point) ErrorRate() float64 {
	if p.Requests == 0 {
		return 0
	}
	return float64(p.Errors) / float64(p.Requests)
}

// Run measures every level of plan against t and returns the points in
// plan order. It stops early, returning the points so far and ctx's
// error, when ctx ends.
func Run(ctx context.Context, t Target, plan Plan) ([]Point, error) {
	if err := plan.Complete(); err != nil {
		return nil, err
	}
	bar := newProgress(plan.Progress, plan.Label, plan.Concurrency, plan.Warmup, plan.Duration)
	defer bar.done()
	var points []Point
	for i, c := range plan.Concurrency {
		if plan.Warmup > 0 {
			bar.phase(i, "warm-up")
			measure(ctx, t, c, plan.Warmup, plan.Timeout, plan.MaxRequests)
		}
		if err := ctx.Err(); err != nil {
			return points, err
		}
		bar.phase(i, "measure")
		p, err := point(ctx, t, c, plan)
		if err != nil {
			return points, err
		}
		points = append(points, p)
		if err := ctx.Err(); err != nil {
			return points, err
		}
	}
	return points, nil
}

func point(ctx context.Context, t Target, c int, plan Plan) (Point, error) {
	var peak atomic.Int64
	m, cpu, err := measureCharged(ctx, t, c, plan.Duration, plan, &peak)
	if err != nil {
		return Point{}, err
	}
	p := summarize(c, m)
	charge(&p, plan, cpu, peak.Load())
	return p, nil
}

// charge fills in p the server's CPU time per call and utilisation and its
// peak RSS, when plan names a server process.
func charge(p *Point, plan Plan, cpu time.Duration, peakRSS int64) {
	if plan.PID <= 0 {
		return
	}
	if p.Requests > 0 {
		p.ServerCPUPerRequestUs = float64(cpu.Microseconds()) / float64(p.Requests)
	}
	if p.Seconds > 0 {
		p.ServerCPUUtilization = cpu.Seconds() / p.Seconds
	}
	p.PeakRSSBytes = peakRSS
}

// sampleRSS records the largest RSS of pid every 50ms until the returned
// function is called.
func sampleRSS(root string, pid int, peak *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if s, err := procstat.Read(root, pid); err == nil && s.RSS > peak.Load() {
					peak.Store(s.RSS)
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// measurement is the raw outcome of one timed run.
type measurement struct {
	latencies []time.Duration
	codes     map[string]int
	elapsed   time.Duration
}

// measure runs c workers calling t back to back until d has passed or the
// budget of calls is spent, whichever comes first.
func measure(ctx context.Context, t Target, c int, d, timeout time.Duration, budget int64) measurement {
	ctx, cancel := context.WithTimeout(ctx, d+timeout)
	defer cancel()
	var left atomic.Int64
	left.Store(budget)
	lats := make([][]time.Duration, c)
	codes := make([]map[string]int, c)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1024)
			var errs map[string]int
			for time.Now().Before(deadline) && ctx.Err() == nil && left.Add(-1) >= 0 {
				cctx, ccancel := context.WithTimeout(ctx, timeout)
				t0 := time.Now()
				code := t.Call(cctx, w)
				lat = append(lat, time.Since(t0))
				ccancel()
				if code != "" {
					if errs == nil {
						errs = map[string]int{}
					}
					errs[code]++
				}
			}
			lats[w], codes[w] = lat, errs
		})
	}
	wg.Wait()
	m := measurement{elapsed: time.Since(start), codes: map[string]int{}}
	for w := range c {
		m.latencies = append(m.latencies, lats[w]...)
		for k, v := range codes[w] {
			m.codes[k] += v
		}
	}
	return m
}

func summarize(c int, m measurement) Point {
	slices.Sort(m.latencies)
	p := Point{Concurrency: c, Requests: len(m.latencies), Seconds: m.elapsed.Seconds(), ErrorsByCode: m.codes}
	if p.Seconds > 0 {
		p.RPS = float64(p.Requests) / p.Seconds
	}
	p.P50Ms = ms(Percentile(m.latencies, 0.50))
	p.P95Ms = ms(Percentile(m.latencies, 0.95))
	p.P99Ms = ms(Percentile(m.latencies, 0.99))
	if n := len(m.latencies); n > 0 {
		p.MaxMs = ms(m.latencies[n-1])
	}
	for _, v := range m.codes {
		p.Errors += v
	}
	return p
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// Percentile returns the nearest-rank q-quantile (0 < q <= 1) of sorted, or
// 0 when sorted is empty.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// Nearest rank: the smallest value with at least q of the samples at or
	// below it.
	rank := int(q*float64(n)+0.999999999) - 1
	return sorted[min(max(rank, 0), n-1)]
}

// RunInterleaved measures several targets side by side: at each level of
// the first plan, every target is warmed up, then the level's Duration is
// cut into rounds and the targets take turns, one slice each per round
// (in reverse order every other round), so that a change in the machine's
// speed during the run (another tenant, frequency, the page cache) falls
// on all of them alike instead of on whichever ran at the time. The
// plans must share their levels, Duration and Warmup; each names its own
// PID. It returns one list of points per target, in plan order.
func RunInterleaved(ctx context.Context, targets []Target, plans []Plan, rounds int) ([][]Point, error) {
	if len(targets) == 0 || len(targets) != len(plans) || rounds < 1 {
		return nil, fmt.Errorf("%w: %d targets, %d plans, %d rounds", ErrPlan, len(targets), len(plans), rounds)
	}
	for i := range plans {
		if err := plans[i].Complete(); err != nil {
			return nil, err
		}
		if !slices.Equal(plans[i].Concurrency, plans[0].Concurrency) || plans[i].Duration != plans[0].Duration || plans[i].Warmup != plans[0].Warmup {
			return nil, fmt.Errorf("%w: interleaved plans differ in levels or durations", ErrPlan)
		}
	}
	slice := plans[0].Duration / time.Duration(rounds)
	out := make([][]Point, len(targets))
	for _, c := range plans[0].Concurrency {
		if plans[0].Warmup > 0 {
			for i, t := range targets {
				measure(ctx, t, c, plans[0].Warmup, plans[i].Timeout, plans[i].MaxRequests)
			}
		}
		acc := make([]measurement, len(targets))
		cpu := make([]time.Duration, len(targets))
		peaks := make([]atomic.Int64, len(targets))
		for r := range rounds {
			for k := range targets {
				i := k
				if r%2 == 1 {
					i = len(targets) - 1 - k
				}
				if err := ctx.Err(); err != nil {
					return out, err
				}
				m, used, err := measureCharged(ctx, targets[i], c, slice, plans[i], &peaks[i])
				if err != nil {
					return out, err
				}
				acc[i].latencies = append(acc[i].latencies, m.latencies...)
				acc[i].elapsed += m.elapsed
				if acc[i].codes == nil {
					acc[i].codes = map[string]int{}
				}
				for code, n := range m.codes {
					acc[i].codes[code] += n
				}
				cpu[i] += used
			}
		}
		for i := range targets {
			p := summarize(c, acc[i])
			charge(&p, plans[i], cpu[i], peaks[i].Load())
			out[i] = append(out[i], p)
		}
	}
	return out, nil
}

// measureCharged is one timed measurement (a point, or a slice of
// RunInterleaved): the calls, and the CPU time and peak RSS of the plan's
// server process meanwhile.
func measureCharged(ctx context.Context, t Target, c int, d time.Duration, plan Plan, peak *atomic.Int64) (measurement, time.Duration, error) {
	if plan.PID <= 0 {
		return measure(ctx, t, c, d, plan.Timeout, plan.MaxRequests), 0, nil
	}
	before, err := procstat.Read(plan.ProcRoot, plan.PID)
	if err != nil {
		return measurement{}, 0, fmt.Errorf("load: server process %d: %w", plan.PID, err)
	}
	if before.RSS > peak.Load() {
		peak.Store(before.RSS)
	}
	stop := sampleRSS(plan.ProcRoot, plan.PID, peak)
	m := measure(ctx, t, c, d, plan.Timeout, plan.MaxRequests)
	stop()
	after, err := procstat.Read(plan.ProcRoot, plan.PID)
	if err != nil {
		return measurement{}, 0, fmt.Errorf("load: server process %d: %w", plan.PID, err)
	}
	if after.RSS > peak.Load() {
		peak.Store(after.RSS)
	}
	return m, after.CPU - before.CPU, nil
}
