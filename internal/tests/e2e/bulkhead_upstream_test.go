package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// goSDKUpstream is an upstream MCP server written with the Go SDK serving
// one tool, get-echo, that waits for delay (0: answers at once). dead
// makes every HTTP request fail with 503 and counts the requests that
// reach it.
type goSDKUpstream struct {
	url     string
	delay   time.Duration
	dead    atomic.Bool
	reached atomic.Int64
	release chan struct{} // closed by free: the delayed calls return
	free    func()
}

func startGoSDKUpstream(t *testing.T, delay time.Duration) *goSDKUpstream {
	t.Helper()
	u := &goSDKUpstream{delay: delay, release: make(chan struct{})}
	u.free = sync.OnceFunc(func() { close(u.release) })
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{
		Name: "get-echo", Description: "Get the text back. Use it to measure a round trip.",
		InputSchema: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"text"},
			"properties": map[string]any{"text": map[string]any{"type": "string", "description": "The text."}}},
		OutputSchema: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"text"},
			"properties": map[string]any{"text": map[string]any{"type": "string", "description": "The same text."}}},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Text string }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		if u.delay > 0 {
			select {
			case <-time.After(u.delay):
			case <-u.release:
			case <-ctx.Done():
			}
		}
		return &mcp.CallToolResult{StructuredContent: map[string]any{"text": in.Text}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.dead.Load() {
			u.reached.Add(1)
			_, _ = io.Copy(io.Discard, r.Body)
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { u.free(); hs.Close(); closeSessions(srv) })
	u.url = hs.URL + "/mcp"
	return u
}

func bulkheadFile(t *testing.T, entries ...string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	if err := os.WriteFile(file, []byte("upstreams:\n"+strings.Join(entries, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func echoEntry(name, url, extra string) string {
	return "  - name: " + name + "\n    mcp: {url: " + url + "}\n    allow_claims: [read_only]\n    timeout: 5s\n" +
		"    naming: {namespace: " + strings.ReplaceAll(name, "-", "") + "}\n" +
		"    overlays:\n      get-echo:\n        examples: [{description: One word., params_json: '{\"text\": \"hi\"}', expected_result_json: '{}'}]\n" + extra
}

// latencies calls tool n times and returns the sorted latencies.
func latencies(t *testing.T, tr Transport, key, tool string, n int) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if o := call(t, tr, key, tool, map[string]any{"text": "hi"}); o.Code != "OK" {
			t.Fatalf("%s: %s %v", tool, o.Code, o.Error)
		}
		out = append(out, time.Since(start))
	}
	slices.Sort(out)
	return out
}

func pct(d []time.Duration, p float64) time.Duration { return d[int(float64(len(d)-1)*p)] }

// TestBulkheadSlowUpstream: an upstream made slow fills its own bound
// (max_in_flight 4); the next call to it fails at once with RATE_LIMITED
// and a retry delay, while another upstream's calls keep their latency.
func TestBulkheadSlowUpstream(t *testing.T) {
	slow := startGoSDKUpstream(t, time.Minute)
	quick := startGoSDKUpstream(t, 0)
	s, c := newUpstreamServer(t, bulkheadFile(t, echoEntry("slow", slow.url, "    max_in_flight: 4\n"), echoEntry("quick", quick.url, "")))
	tr := GRPC{S: s}

	before := latencies(t, tr, c.Full, "get-quick-echo", 200)

	var wg sync.WaitGroup
	results := make(chan Outcome, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			o, _ := tr.Call(ctx, c.Full, "get-slow-echo", map[string]any{"text": "wait"}, nil)
			results <- o
		}()
	}
	eventually(t, func() bool { return bulkheadOf(t, s, "slow")["in_flight"] == 4.0 }, "the slow upstream never held 4 calls")

	for _, x := range transportsOf(s) {
		start := time.Now()
		o := call(t, x, c.Full, "get-slow-echo", map[string]any{"text": "more"})
		took := time.Since(start)
		if o.Code != "RATE_LIMITED" || o.Error["retryAfterSeconds"] == nil || !strings.Contains(jsonText(o.Error), "upstream slow") {
			t.Fatalf("%s: a call beyond the slow upstream's bound: %s %v", x.Name(), o.Code, o.Error)
		}
		t.Logf("%s: refused by the bound in %v", x.Name(), took)
	}
	during := latencies(t, tr, c.Full, "get-quick-echo", 200)
	t.Logf("quick upstream over gRPC, 200 calls each: before p50 %v p99 %v; while slow is saturated p50 %v p99 %v",
		pct(before, 0.5), pct(before, 0.99), pct(during, 0.5), pct(during, 0.99))
	if h := bulkheadOf(t, s, "quick"); h["in_flight"] != 0.0 || h["rejected"] != 0.0 {
		t.Fatalf("quick's bulkhead %v", h)
	}
	if h := bulkheadOf(t, s, "slow"); h["rejected"] != 3.0 || h["circuit"] != "closed" {
		t.Fatalf("slow's bulkhead %v", h)
	}
	slow.free()
	wg.Wait()
	close(results)
	for o := range results {
		if o.Code != "OK" {
			t.Fatalf("a call within the bound: %s %v", o.Code, o.Error)
		}
	}
}

// TestCircuitDeadUpstream: an upstream that dies fails its calls; after
// circuit.failures of them its circuit opens and the next calls are
// answered at once with a retryable PROVIDER_ERROR naming the upstream,
// without a request reaching it; the operator view and the metrics show
// the circuit open.
func TestCircuitDeadUpstream(t *testing.T) {
	up := startGoSDKUpstream(t, 0)
	s, c := newUpstreamServer(t, bulkheadFile(t, echoEntry("flaky", up.url, "    circuit: {failures: 3, open_for: 1m}\n")))
	tr := GRPC{S: s}
	if o := call(t, tr, c.Full, "get-flaky-echo", map[string]any{"text": "hi"}); o.Code != "OK" {
		t.Fatalf("%s %v", o.Code, o.Error)
	}
	up.dead.Store(true)
	for i := range 3 {
		if o := call(t, tr, c.Full, "get-flaky-echo", map[string]any{"text": "hi"}); o.Code != "PROVIDER_ERROR" {
			t.Fatalf("call %d to the dead upstream: %s %v", i, o.Code, o.Error)
		}
	}
	reached := up.reached.Load()
	if reached == 0 {
		t.Fatal("the failed calls never reached the upstream")
	}
	var took []time.Duration
	for _, x := range transportsOf(s) {
		for range 20 {
			start := time.Now()
			o := call(t, x, c.Full, "get-flaky-echo", map[string]any{"text": "hi"})
			took = append(took, time.Since(start))
			if o.Code != "PROVIDER_ERROR" || o.Error["retryable"] != true || !strings.Contains(jsonText(o.Error), "circuit is open") ||
				!strings.Contains(jsonText(o.Error), "upstream flaky") {
				t.Fatalf("%s: the open circuit answered %s %v", x.Name(), o.Code, o.Error)
			}
		}
	}
	if n := up.reached.Load(); n != reached {
		t.Fatalf("%d requests reached the upstream through an open circuit", n-reached)
	}
	slices.Sort(took)
	t.Logf("open circuit, 60 calls over gRPC, REST and MCP: p50 %v p99 %v max %v", pct(took, 0.5), pct(took, 0.99), took[len(took)-1])
	if h := bulkheadOf(t, s, "flaky"); h["circuit"] != "open" || h["opened"] != 1.0 || h["short_circuited"] != 60.0 {
		t.Fatalf("operator view: %v", h)
	}
	if m := upstreamMetricsText(t, s); !strings.Contains(m, `toolsvc_upstream_circuit_open{upstream="flaky"} 1`) ||
		!strings.Contains(m, `toolsvc_upstream_rejected_total{reason="circuit",upstream="flaky"} 60`) {
		t.Fatalf("metrics lack the open circuit:\n%s", grepLines(m, "toolsvc_upstream_"))
	}
}

func bulkheadOf(t *testing.T, s *testserver.Server, name string) map[string]any {
	t.Helper()
	for _, u := range healthz(t, s)["upstreams"].([]any) {
		if h := u.(map[string]any); h["name"] == name {
			b, _ := h["bulkhead"].(map[string]any)
			return b
		}
	}
	t.Fatalf("no upstream %s on the operator view", name)
	return nil
}

func upstreamMetricsText(t *testing.T, s *testserver.Server) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.HTTP+"/metrics", nil)
	if key, ok := operatorKeys.Load(s); ok {
		req.Header.Set("Authorization", "Bearer "+key.(string))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// closeSessions ends the Go SDK server's sessions, whose goroutines
// outlive the HTTP server otherwise.
func closeSessions(srv *mcp.Server) {
	for ss := range srv.Sessions() {
		_ = ss.Close()
	}
}
