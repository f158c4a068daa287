package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// target is where load goes: a gRPC connection and the HTTP base URL, with
// the credentials to spread calls over (per-tool limits are per principal).
type target struct {
	conn   grpc.ClientConnInterface
	http   string
	tokens []string
	trs    []string
	// sessions are the MCP sessions of mcpCall, by token.
	sessions sync.Map
}

// mixCall makes one call of the tool mix over a transport picked in turn.
func (tg *target) mixCall(ctx context.Context, i int) (outcome, error) {
	tr := tg.trs[i%len(tg.trs)]
	token := ""
	if len(tg.tokens) > 0 {
		token = tg.tokens[rand.IntN(len(tg.tokens))]
	}
	tool, args := mixArgs(i)
	if tr == trMCP {
		return tg.mcpCall(ctx, token, tool, args)
	}
	return callOn(ctx, tg.conn, tg.http, tr, token, tool, args, nil)
}

// mcpCall calls over MCP as an agent does: one session per credential,
// opened on first use and reused, and opened again when the server has
// ended it (404). A client that opens a session per call is another
// test's business (TestSessionsPerPrincipalAreBounded).
func (tg *target) mcpCall(ctx context.Context, token, tool string, args map[string]any) (outcome, error) {
	body, err := json.Marshal(args)
	if err != nil {
		return outcome{}, err
	}
	for attempt := 0; ; attempt++ {
		v, ok := tg.sessions.Load(token)
		if !ok {
			mc, err := newMCPClient(ctx, tg.http, token, nil)
			if err != nil {
				// callOn maps a refused initialize to its outcome.
				return callOn(ctx, tg.conn, tg.http, trMCP, token, tool, args, nil)
			}
			v, _ = tg.sessions.LoadOrStore(token, mc)
		}
		o, err := v.(*mcpClient).callRaw(ctx, tool, body)
		if err == nil && o.HTTPStatus == http.StatusNotFound && attempt == 0 {
			tg.sessions.CompareAndDelete(token, v)
			continue
		}
		return o, err
	}
}

// mixArgs is the tool and arguments of call i of the mix.
func mixArgs(i int) (tool string, args map[string]any) {
	switch i % 10 {
	case 0, 1:
		tool, args = "add-memory", map[string]any{"content": fmt.Sprintf("load test memory %d about %s", i, randomWord())}
	case 2, 3, 4, 5:
		tool, args = "search-memories", map[string]any{"query": "load test memory " + randomWord()[:3]}
	case 6, 7:
		tool, args = "query-knowledge", map[string]any{"query": "database selection"}
	case 8:
		tool, args = "check-knowledge", map[string]any{"dependencies": []any{map[string]any{"name": "github.com/pkg/errors"}}}
	default:
		tool, args = "get-sync-status", map[string]any{}
	}
	return tool, args
}

// stats are the outcomes of a load phase.
type stats struct {
	mu        sync.Mutex
	codes     map[string]int
	latencies []time.Duration
	transport int // transport-level failures
	// tools breaks the outcomes down by tool, for the logs.
	tools map[string]*toolStats
}

type toolStats struct {
	codes     map[string]int
	latencies []time.Duration // of every answered call
}

func newStats() *stats { return &stats{codes: map[string]int{}, tools: map[string]*toolStats{}} }

// addCall records call i of the mix.
func (s *stats) addCall(i int, o outcome, err error, d time.Duration) {
	tool, _ := mixArgs(i)
	s.mu.Lock()
	ts := s.tools[tool]
	if ts == nil {
		ts = &toolStats{codes: map[string]int{}}
		s.tools[tool] = ts
	}
	if err == nil {
		ts.codes[o.Code]++
		ts.latencies = append(ts.latencies, d)
	}
	s.mu.Unlock()
	s.add(o, err, d)
}

// byTool renders each tool's codes and p50/p99 latency.
func (s *stats) byTool() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, tool := range slices.Sorted(maps.Keys(s.tools)) {
		ts := s.tools[tool]
		l := slices.Clone(ts.latencies)
		slices.Sort(l)
		if len(l) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n      %s: %v p50 %s p99 %s", tool, ts.codes, l[len(l)/2].Round(time.Millisecond), l[len(l)*99/100].Round(time.Millisecond))
	}
	return b.String()
}

func (s *stats) add(o outcome, err error, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.transport++
		return
	}
	code := o.Code
	if code == "RATE_LIMITED" && o.Error != nil {
		if det, _ := o.Error["details"].(map[string]any); det["reason"] == "overloaded" {
			code = "SHED"
		}
	}
	s.codes[code]++
	if o.Code == "OK" {
		s.latencies = append(s.latencies, d)
	}
}

// merge adds o's codes, transport failures and latencies to s.
func (s *stats) merge(o *stats) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for code, n := range o.codes {
		s.codes[code] += n
	}
	s.transport += o.transport
	s.latencies = append(s.latencies, o.latencies...)
}

func (s *stats) p99() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.latencies) == 0 {
		return 0
	}
	l := slices.Clone(s.latencies)
	slices.Sort(l)
	return l[len(l)*99/100]
}

func (s *stats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("codes %v, transport failures %d", s.codes, s.transport)
}

// closedLoop runs workers calling back to back for d and returns the
// throughput in calls per second.
func closedLoop(tg *target, workers int, d time.Duration, st *stats) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var n atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ctx.Err() == nil; i += workers {
				start := time.Now()
				cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
				o, err := tg.mixCall(cctx, i)
				ccancel()
				if ctx.Err() != nil && err != nil {
					return
				}
				st.addCall(i, o, err, time.Since(start))
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / d.Seconds()
}

// openLoop sends rate calls per second for d whatever the answers (at most
// maxOutstanding at once; beyond that the arrival is counted as dropped by
// the client, which TestOverload reports).
func openLoop(tg *target, rate float64, d time.Duration, maxOutstanding int, st *stats) (dropped int) {
	interval := time.Duration(float64(time.Second) / rate)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	end := time.Now().Add(d)
	sem := make(chan struct{}, maxOutstanding)
	var wg sync.WaitGroup
	for i := 0; time.Now().Before(end); i++ {
		<-ticker.C
		select {
		case sem <- struct{}{}:
		default:
			dropped++
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			o, err := tg.mixCall(ctx, i)
			st.addCall(i, o, err, time.Since(start))
		}()
	}
	wg.Wait()
	return dropped
}

// TestOverloadIsShed drives the in-process server far beyond a small
// in-flight limit over every transport: the excess is refused with
// RATE_LIMITED (reason overloaded, Retry-After), nothing else fails, and
// the service answers normally once the load drops.
func TestOverloadIsShed(t *testing.T) {
	s := testserver.New(t, testserver.Options{Configure: func(c *server.Config) {
		c.Chain.MaxInFlight = 4
		c.RateLimitCeiling = 0
	}})
	tg := &target{conn: s.Conn, http: s.HTTP, trs: []string{trGRPC, trREST}}
	if mcpAvailable(t, s.HTTP) {
		tg.trs = append(tg.trs, trMCP)
	}
	st := newStats()
	closedLoop(tg, 64, 3*time.Second, st)
	t.Logf("overload: %s", st)
	if st.codes["SHED"] == 0 {
		t.Fatalf("64 clients against 4 slots were never shed: %s", st)
	}
	if st.codes["OK"] == 0 {
		t.Fatalf("nothing succeeded under overload (collapse): %s", st)
	}
	for code, n := range st.codes {
		if code != "OK" && code != "SHED" && code != "RATE_LIMITED" {
			t.Errorf("%d calls failed with %s under overload: only shedding and rate limits are allowed", n, code)
		}
	}
	if st.transport > 0 {
		t.Errorf("%d calls failed at the transport level", st.transport)
	}
	after := newStats()
	closedLoop(tg, 2, time.Second, after)
	if after.codes["SHED"] > 0 || after.codes["OK"] == 0 {
		t.Fatalf("no recovery after the overload: %s", after)
	}
}
