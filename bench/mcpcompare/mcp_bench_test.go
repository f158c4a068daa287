package mcpcompare_test

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	m3mcp "github.com/mark3labs/mcp-go/mcp"
	m3server "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/bench/internal/mcpcheck"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// Benchmarks compare, in one run and over the same loopback HTTP client,
// toolsvc's full chain (auth, policy, rate limit, validation, logging,
// metrics, audit, a real tool) with bare echo servers of mark3labs/mcp-go
// and the official go-sdk. Run:
//
//	(cd bench && go test -run '^$' -bench . -benchtime 3s ./mcpcompare/)

// benchTarget is an MCP endpoint and the tools/call body to send it.
type benchTarget struct {
	url, call string
}

func bareMark3labs(tb testing.TB, tools int) string {
	tb.Helper()
	s := m3server.NewMCPServer("echo", "1.0.0", m3server.WithToolCapabilities(false))
	for i := range tools {
		name := "echo"
		if i > 0 {
			name = fmt.Sprintf("echo-%04d", i)
		}
		s.AddTool(m3mcp.NewTool(name, m3mcp.WithDescription("Echo the text back."), m3mcp.WithString("text", m3mcp.Required())),
			func(_ context.Context, req m3mcp.CallToolRequest) (*m3mcp.CallToolResult, error) {
				return m3mcp.NewToolResultText(req.GetString("text", "")), nil
			})
	}
	srv := httptest.NewServer(m3server.NewStreamableHTTPServer(s))
	tb.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

type echoIn struct {
	Text string `json:"text"`
}

func bareGoSDK(tb testing.TB, tools int) string {
	tb.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1.0.0"}, nil)
	for i := range tools {
		name := "echo"
		if i > 0 {
			name = fmt.Sprintf("echo-%04d", i)
		}
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Echo the text back."},
			func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
			})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv.URL
}

// benchClient is a keep-alive HTTP client with a session.
type benchClient struct {
	http    *http.Client
	url     string
	session string
	// keys, when set, are API keys used in turn: tool rate limits are per
	// principal, so many principals let a benchmark exceed one's budget.
	keys []string
	// buf is reused for the response bodies of one worker.
	buf bytes.Buffer
}

func newBenchClient(tb testing.TB, url string, conns int, keys []string) *benchClient {
	tb.Helper()
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	tb.Cleanup(tr.CloseIdleConnections)
	c := &benchClient{http: &http.Client{Transport: tr}, url: url, keys: keys}
	resp := c.do(tb, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	c.session = resp.Header.Get("Mcp-Session-Id")
	c.do(tb, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *benchClient) do(tb testing.TB, body string) *http.Response {
	return c.doAs(tb, body, 0, nil)
}

// doAs sends body with the nth API key and checks the response with
// check (mcpcheck.Call when nil) after an HTTP success. It reads the
// response cheaply, as a load client should: the benchmarks measure the
// server, and the client shares its cores.
func (c *benchClient) doAs(tb testing.TB, body string, n int64, check func([]byte) error) *http.Response {
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if len(c.keys) > 0 {
		req.Header.Set("Authorization", "Bearer "+c.keys[n%int64(len(c.keys))])
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		tb.Error(err)
		return &http.Response{}
	}
	c.buf.Reset()
	_, err = c.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	out := c.buf.Bytes()
	switch {
	case err != nil:
		tb.Error(err)
		return resp
	case resp.StatusCode >= 300:
		tb.Errorf("HTTP %d: %.300s", resp.StatusCode, out)
		return resp
	case len(out) == 0:
		return resp // 202 of a notification
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		// The response event of a stream: its data.
		_, data, _ := bytes.Cut(out, []byte("data:"))
		out, _, _ = bytes.Cut(bytes.TrimSpace(data), []byte("\n\n"))
	}
	if check == nil {
		check = mcpcheck.Call
	}
	if err := check(out); err != nil {
		tb.Errorf("HTTP %d (%v): %.300s", resp.StatusCode, err, out)
	}
	return resp
}

// drive sends b.N copies of body with conc concurrent clients and reports
// throughput and latency percentiles; check verifies each response
// (mcpcheck.Call when nil).
func drive(b *testing.B, url, body string, conc int, keys []string, check func([]byte) error) {
	c := newBenchClient(b, url, conc, keys)
	c.doAs(b, body, 0, check) // warm caches and connections
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker has its own body buffer; the session is shared.
			wc := &benchClient{http: c.http, url: c.url, session: c.session, keys: c.keys}
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				// Unique ids: a session may not reuse an in-flight id.
				req := strings.Replace(body, `"id":1,`, `"id":`+strconv.FormatInt(i+2, 10)+`,`, 1)
				t0 := time.Now()
				wc.doAs(b, req, i, check)
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// benchAuthServer runs toolsvc stateless with an auth file of 400 API keys,
// so that calls rotate principals (real API-key authentication on every
// call) and stay within each principal's tool rate limit.
func benchAuthServer(b *testing.B) (*testserver.Server, []string) {
	b.Helper()
	var keys []string
	var file strings.Builder
	file.WriteString("api_keys:\n")
	for i := range 400 {
		k := fmt.Sprintf("bench-key-%04d-xxxxxxxxxxxxxxxx", i)
		keys = append(keys, k)
		fmt.Fprintf(&file, "  - key_sha256: %q\n    subject: bench-%d\n    tenant: bench\n    permissions: [\"*\"]\n", auth.HashKey(k), i)
	}
	path := filepath.Join(b.TempDir(), "auth.yaml")
	if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	srv := testserver.New(b, testserver.Options{Configure: func(c *server.Config) {
		c.AuthFile, c.MCP.Stateless, c.RateLimitCeiling = path, true, 1<<30
	}})
	return srv, keys
}

// BenchmarkToolsCall: a tools/call through toolsvc's full chain with a real
// tool (get-sync-status on SQLite) beside bare echo servers.
func BenchmarkToolsCall(b *testing.B) {
	srv, keys := benchAuthServer(b)
	targets := []struct {
		name string
		benchTarget
		keys []string
	}{
		{"toolsvc-full-chain", benchTarget{srv.HTTP + "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}`}, keys},
		{"mark3labs-bare-echo", benchTarget{bareMark3labs(b, 1), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`}, nil},
		{"gosdk-bare-echo", benchTarget{bareGoSDK(b, 1), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`}, nil},
	}
	for _, conc := range []int{1, 8, 64} {
		for _, t := range targets {
			b.Run(fmt.Sprintf("c=%d/%s", conc, t.name), func(b *testing.B) {
				drive(b, t.url, t.call, conc, t.keys, nil)
			})
		}
	}
}
