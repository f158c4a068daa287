package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
)

// The servers of these tests are written with the Go SDK (go-sdk 1.8.0),
// not with toolsvc's code: one that speaks only 2026-07-28, one that
// speaks only 2025-11-25, each over Streamable HTTP and over stdio (this
// test binary started again as the child process, see TestMain).

// stdioServerEnv makes the test binary an MCP server on stdio: its value
// is the one revision the server speaks.
const stdioServerEnv = "TOOLSVC_TEST_GOSDK_STDIO"

func TestMain(m *testing.M) {
	if v := os.Getenv(stdioServerEnv); v != "" {
		if err := askingServer([]string{v}).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cancelledCalls counts the calls of the wait tool whose context the
// server saw cancelled (in the process that serves them).
var cancelledCalls atomic.Int64

// askingServer is a Go SDK server whose tools ask the client: confirm
// elicits a form, login a URL, summarize samples the client's model (each
// as a multi-round-trip result, which the SDK sends as input_required to
// a 2026 client and as server-to-client requests to a 2025 one),
// direct-confirm elicits with a request of the server (2025 only),
// count reports progress, wait blocks until cancelled, stats says how many
// were.
func askingServer(versions []string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "1.0.0"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	object := map[string]any{"type": "object"}
	tool := func(name string) *mcp.Tool { return &mcp.Tool{Name: name, InputSchema: object} }
	result := func(v any) *mcp.CallToolResult {
		b, _ := json.Marshal(v)
		var sc map[string]any
		_ = json.Unmarshal(b, &sc)
		return &mcp.CallToolResult{StructuredContent: sc, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
	}
	asks := func(name string, ask mcp.InputRequest) {
		srv.AddTool(tool(name), func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["q"]; ok {
				return result(map[string]any{"answer": r, "state": req.Params.RequestState}), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": ask}, RequestState: "round-1"}, nil
		})
	}
	asks("confirm", &mcp.ElicitParams{Mode: "form", Message: "Delete 3 files?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}, "required": []any{"ok"}}})
	asks("login", &mcp.ElicitParams{Mode: "url", Message: "Sign in to the archive.", URL: "https://archive.example/login?state=abc", ElicitationID: "el-1"})
	// Sampling is deprecated in 2026-07-28 (SEP-2577) but still part of it.
	asks("summarize", &mcp.CreateMessageParams{MaxTokens: 50, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarize: the sky is blue."}}}}) //nolint:staticcheck // SA1019: the deprecated feature is what is relayed
	srv.AddTool(tool("direct-confirm"), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Proceed?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
		if err != nil {
			return nil, err
		}
		return result(map[string]any{"answer": res}), nil
	})
	srv.AddTool(tool("count"), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		for i := 1; token != nil && i <= 2; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 2, Message: fmt.Sprintf("step %d", i)}); err != nil {
				return nil, err
			}
		}
		return result(map[string]any{"token": token != nil}), nil
	})
	srv.AddTool(tool("wait"), func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-ctx.Done():
			cancelledCalls.Add(1)
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return result(map[string]any{}), nil
		}
	})
	srv.AddTool(tool("stats"), func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return result(map[string]any{"cancelled": cancelledCalls.Load()}), nil
	})
	return srv
}

// testAsker answers the upstream's questions as a client would, and keeps
// what it was asked.
type testAsker struct {
	mu    sync.Mutex
	asked []string // method: message
	fail  error
}

func (a *testAsker) Ask(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		Message  string `json:"message"`
		Mode     string `json:"mode"`
		URL      string `json:"url"`
		Messages []struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail != nil {
		return nil, a.fail
	}
	switch {
	case method == methodSample:
		a.asked = append(a.asked, method+": "+p.Messages[0].Content.Text)
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"The sky is blue."},"model":"test-model","stopReason":"endTurn"}`), nil
	case p.Mode == "url":
		a.asked = append(a.asked, method+" url: "+p.URL)
		return json.RawMessage(`{"action":"accept"}`), nil
	default:
		a.asked = append(a.asked, method+": "+p.Message)
		return json.RawMessage(`{"action":"accept","content":{"ok":true}}`), nil
	}
}

func (a *testAsker) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// upstreamServer is a Go SDK server speaking only revision, reached over
// transport (http or stdio), with mcp.protocol set to protocol.
func upstreamClient(t *testing.T, transport, revision, protocol string) *mcpClient {
	t.Helper()
	m := &MCPServer{Protocol: protocol, MaxResponseBytes: DefaultMaxResponseBytes}
	if transport == "stdio" {
		t.Setenv(stdioServerEnv, revision)
		m.Command, m.Env = []string{os.Args[0]}, []string{stdioServerEnv}
	} else {
		srv := askingServer([]string{revision})
		// The Go SDK serves 2026-07-28 over HTTP only without sessions, and
		// cancels a handler when its POST is aborted (the revision's
		// cancellation over HTTP) only when asked to.
		opts := &mcp.StreamableHTTPOptions{Stateless: revision == Revision2026, PropagateRequestCancellation: true}
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts))
		t.Cleanup(hs.Close)
		m.URL = hs.URL
	}
	c, err := newMCPClient(Config{Name: "asking", MCP: m, TLS: TLS{Mode: "plaintext"}}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	return c
}

func callTool(ctx context.Context, c *mcpClient, name string) (map[string]any, error) {
	res, err := c.call(ctx, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}, "_meta": map[string]any{"toolsvc/correlation-id": "c-1"}}, nil)
	if err != nil {
		return nil, err
	}
	var out struct {
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
		Content           []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return nil, err
	}
	if out.IsError {
		return nil, fmt.Errorf("tool error: %+v", out.Content)
	}
	return out.StructuredContent, nil
}

// TestUpstreamRevisions: toolsvc's client speaks 2026-07-28 to a server
// that speaks only it and 2025-11-25 to one that speaks only that, chosen
// by server/discover, over HTTP and stdio; in both, a server's questions
// (form and URL elicitation, sampling) reach the call's client through
// its Asker and the answers come back unchanged, progress is relayed and
// a cancelled call is cancelled on the server.
func TestUpstreamRevisions(t *testing.T) {
	for _, transport := range []string{"http", "stdio"} {
		for _, rev := range []string{Revision2026, Revision2025} {
			t.Run(transport+"/"+rev, func(t *testing.T) {
				c := upstreamClient(t, transport, rev, "")
				asker := &testAsker{}
				ctx := callctx.WithAsker(context.Background(), asker)
				out, err := callTool(ctx, c, "confirm")
				if err != nil {
					t.Fatal(err)
				}
				if got := c.revision(); got != rev {
					t.Fatalf("revision spoken %q, want %q", got, rev)
				}
				if rev2, how := c.protocolState(); rev2 != rev || (rev == Revision2026) != strings.HasPrefix(how, "discovered") {
					t.Fatalf("protocol state %q %q", rev2, how)
				}
				answer, _ := json.Marshal(out["answer"])
				if string(answer) != `{"action":"accept","content":{"ok":true}}` || out["state"] != "round-1" {
					t.Fatalf("the form elicitation's answer reached the tool as %s (state %v)", answer, out["state"])
				}
				if out, err = callTool(ctx, c, "login"); err != nil {
					t.Fatal(err)
				}
				if a := out["answer"].(map[string]any); a["action"] != "accept" {
					t.Fatalf("url elicitation answer %v", a)
				}
				if out, err = callTool(ctx, c, "summarize"); err != nil {
					t.Fatal(err)
				}
				if a, _ := json.Marshal(out["answer"]); !strings.Contains(string(a), "The sky is blue.") || !strings.Contains(string(a), "test-model") {
					t.Fatalf("sampling answer %s", a)
				}
				want := []string{methodElicit + ": Delete 3 files?", methodElicit + " url: https://archive.example/login?state=abc", methodSample + ": Summarize: the sky is blue."}
				if rev == Revision2025 {
					if _, err := callTool(ctx, c, "direct-confirm"); err != nil {
						t.Fatal(err)
					}
					want = append(want, methodElicit+": Proceed?")
				}
				if got := asker.questions(); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("the client was asked\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}

				// A client that cannot be asked: a clear error naming it, no answer invented.
				_, err = callTool(context.Background(), c, "confirm")
				var ae *askError
				if rev == Revision2026 && (!errors.As(err, &ae) || !strings.Contains(err.Error(), "cannot be asked")) {
					t.Fatalf("a call whose client cannot be asked: %v", err)
				}
				if rev == Revision2025 && err == nil {
					t.Fatal("a call whose client cannot be asked succeeded")
				}
				asker.fail = errors.New("the client declared no sampling capability")
				if _, err := callTool(ctx, c, "summarize"); !errors.As(err, &ae) || !strings.Contains(err.Error(), "no sampling capability") {
					t.Fatalf("a client without sampling: %v", err)
				}

				// Progress relayed.
				var mu sync.Mutex
				var steps []string
				pctx := callctx.WithProgress(context.Background(), func(done, total float64, message string) {
					mu.Lock()
					steps = append(steps, fmt.Sprintf("%g/%g %s", done, total, message))
					mu.Unlock()
				})
				if out, err = callTool(pctx, c, "count"); err != nil || out["token"] != true {
					t.Fatalf("count: %v %v", out, err)
				}
				mu.Lock()
				if strings.Join(steps, ",") != "1/2 step 1,2/2 step 2" {
					t.Fatalf("progress relayed: %q", steps)
				}
				mu.Unlock()

				// Cancellation reaches the server.
				before := stats(t, c)
				cctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				_, err = callTool(cctx, c, "wait")
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("wait: %v", err)
				}
				deadline := time.Now().Add(10 * time.Second)
				for stats(t, c) == before {
					if time.Now().After(deadline) {
						t.Fatal("the server never saw the call cancelled")
					}
					time.Sleep(20 * time.Millisecond)
				}
			})
		}
	}
}

func stats(t *testing.T, c *mcpClient) float64 {
	t.Helper()
	out, err := callTool(context.Background(), c, "stats")
	if err != nil {
		t.Fatal(err)
	}
	return out["cancelled"].(float64)
}

// TestUpstreamProtocolOverride: mcp.protocol forces a revision: 2025-11-25
// to a server that speaks both, and 2026-07-28 to a server that speaks
// only 2025 fails with the reason instead of falling back.
func TestUpstreamProtocolOverride(t *testing.T) {
	ctx := context.Background()
	srv := askingServer(nil) // both revisions
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer hs.Close()
	for _, tc := range []struct{ protocol, want string }{{"", Revision2026}, {ProtocolAuto, Revision2026}, {Revision2025, Revision2025}} {
		c, err := newMCPClient(Config{Name: "both", MCP: &MCPServer{URL: hs.URL, Protocol: tc.protocol}, TLS: TLS{Mode: "plaintext"}}, slog.New(slog.DiscardHandler), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := callTool(ctx, c, "stats"); err != nil {
			t.Fatal(err)
		}
		if c.revision() != tc.want {
			t.Errorf("mcp.protocol %q: spoke %q, want %q", tc.protocol, c.revision(), tc.want)
		}
		c.close()
	}
	c := upstreamClient(t, "http", Revision2025, Revision2026)
	if _, err := callTool(ctx, c, "stats"); err == nil || !strings.Contains(err.Error(), "mcp.protocol "+Revision2026) {
		t.Fatalf("2026-07-28 forced on a 2025 server: %v", err)
	}

	// The Go SDK's server with sessions lists 2026-07-28 in server/discover
	// but refuses requests in it: auto falls back and says why.
	stateful := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer stateful.Close()
	c, err := newMCPClient(Config{Name: "stateful", MCP: &MCPServer{URL: stateful.URL}, TLS: TLS{Mode: "plaintext"}}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if _, err := callTool(ctx, c, "stats"); err != nil {
		t.Fatal(err)
	}
	if rev, how := c.protocolState(); rev != Revision2025 || !strings.HasPrefix(how, "fallback") {
		t.Fatalf("a server with sessions: %q %q", rev, how)
	}
}

// TestUpstreamServed2026: a Go SDK server that speaks only 2026-07-28 is
// served by an upstreams file with no protocol option: the operator view
// says which revision and how; every request carried the revision's
// headers and no session; the tools/list cache lifetime is honoured (a
// refresh for another reason, as an approval makes, lists nothing) until
// the server says its list changed on the subscriptions/listen stream,
// which brings the new tool.
func TestUpstreamServed2026(t *testing.T) {
	var lists atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0.0"}, &mcp.ServerOptions{
		SupportedProtocolVersions: []string{Revision2026},
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if _, ok := req.GetParams().(*mcp.ListToolsParams); ok {
				c.TTLMs = 3_600_000
			}
		},
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	forecast := func(name string) {
		srv.AddTool(&mcp.Tool{Name: name, Description: "Get the weather forecast of a city. Returns one sentence.",
			InputSchema: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"city"},
				"properties": map[string]any{"city": map[string]any{"type": "string", "description": "Name of the city."}}},
			OutputSchema: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"forecast"},
				"properties": map[string]any{"forecast": map[string]any{"type": "string", "description": "The forecast."}}},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"forecast": "Sunny."}}, nil
		})
	}
	forecast("get-forecast")
	var mu sync.Mutex
	var bad []string
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && (r.Header.Get("MCP-Protocol-Version") != Revision2026 || r.Header.Get(HeaderMcpMethod) == "" || r.Header.Get("Mcp-Session-Id") != "") {
			mu.Lock()
			bad = append(bad, fmt.Sprintf("%s %v", r.Method, r.Header))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	file := t.TempDir() + "/upstreams.yaml"
	body := "upstreams:\n  - name: weather\n    mcp: {url: " + hs.URL + "}\n    tls: {mode: plaintext}\n    allow_claims: [read_only]\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 4)
	set, err := Load(context.Background(), file, slog.New(slog.DiscardHandler), WithOnChange(func() { changed <- struct{}{} }))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	health := set.Health(nil)
	if p := health[0].Protocol; health[0].Error != "" || p == nil || p.Revision != Revision2026 || p.Configured != ProtocolAuto || p.Chosen != "discovered (server/discover)" {
		t.Fatalf("operator view: %+v %+v", health[0], p)
	}
	if revs := set.Revisions(); revs["weather"] != Revision2026 {
		t.Fatalf("revisions for metrics: %v", revs)
	}
	u := set.ups[0]
	u.refresh() // as an approval does
	<-changed
	if n := lists.Load(); n != 1 {
		t.Fatalf("tools/list sent %d times within its ttlMs, want 1", n)
	}
	forecast("get-forecast-hourly")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's list change was not heard on subscriptions/listen")
	}
	if n := lists.Load(); n != 2 {
		t.Fatalf("tools/list sent %d times after list_changed, want 2", n)
	}
	u.mu.Lock()
	names := len(u.names)
	u.mu.Unlock()
	if names != 2 {
		t.Fatalf("%d tools served after the change, want 2: %+v", names, set.Health(nil)[0])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("requests without the 2026 headers, or with a session: %v", bad)
	}
}

// TestUpstreamQuestionWithoutItsCall: a 2025 server's question on stdio
// carries nothing that relates it to a call; with two calls in flight
// toolsvc refuses it rather than put it to another caller's client.
func TestUpstreamQuestionWithoutItsCall(t *testing.T) {
	c := upstreamClient(t, "stdio", Revision2025, "")
	other := &testAsker{}
	wctx, cancel := context.WithCancel(callctx.WithAsker(context.Background(), other))
	waited := make(chan error, 1)
	go func() { _, err := callTool(wctx, c, "wait"); waited <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.fmu.Lock()
		n := len(c.calls)
		c.fmu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the wait call never went out")
		}
		time.Sleep(10 * time.Millisecond)
	}
	asker := &testAsker{}
	_, err := callTool(callctx.WithAsker(context.Background(), asker), c, "direct-confirm")
	if err == nil || !strings.Contains(err.Error(), "cannot tell which call asks") {
		t.Fatalf("a question with two calls in flight: %v", err)
	}
	if len(asker.questions())+len(other.questions()) != 0 {
		t.Fatalf("a client was asked: %v %v", asker.questions(), other.questions())
	}
	cancel()
	<-waited
}

// TestInputRequiredChecked: a 2026 server's input_required result that
// asks what toolsvc does not relay, or lists no inputRequests, or never
// ends, fails the call as a malformed answer; nothing is asked.
func TestInputRequiredChecked(t *testing.T) {
	var mode atomic.Value
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		w.Header().Set("Content-Type", "application/json")
		result := `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}`
		if m.Method == "tools/call" {
			result = map[string]string{
				"roots":   `{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list","params":{}}}}`,
				"none":    `{"resultType":"input_required"}`,
				"forever": `{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"Again?","requestedSchema":{"type":"object","properties":{"Name":{"type":"string"}}}}}},"requestState":"x"}`,
			}[mode.Load().(string)]
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	}))
	defer hs.Close()
	c, err := newMCPClient(Config{Name: "fake", MCP: &MCPServer{URL: hs.URL}, TLS: TLS{Mode: "plaintext"}}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	asker := &testAsker{}
	ctx := callctx.WithAsker(context.Background(), asker)
	for m, want := range map[string]string{"roots": "roots/list", "none": "without inputRequests", "forever": "asked for input 10 times"} {
		mode.Store(m)
		if _, err := callTool(ctx, c, "confirm"); !errors.Is(err, errMalformedMessage) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", m, err)
		}
	}
	if n := len(asker.questions()); n != 9 {
		t.Errorf("the client was asked %d times, want 9 (the rounds before the bound)", n)
	}
}

func TestHeaderValue(t *testing.T) {
	for _, tc := range [][2]string{
		{"get-forecast", "get-forecast"},
		{"météo", "=?base64?bcOpdMOpbw==?="},
		{"padded ", "=?base64?cGFkZGVkIA==?="},
		{"=?base64?x?=", "=?base64?PT9iYXNlNjQ/eD89?="},
		{"a\nb", "=?base64?YQpi?="},
	} {
		if got := headerValue(tc[0]); got != tc[1] {
			t.Errorf("headerValue(%q) = %q, want %q", tc[0], got, tc[1])
		}
	}
}

// slowAsker answers after wait.
type slowAsker struct{ wait time.Duration }

func (a slowAsker) Ask(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
	select {
	case <-time.After(a.wait):
		return json.RawMessage(`{"action":"accept"}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestCallClockStopsWhileAsking: an upstream call's timeout does not run
// while the client answers the server's question (longer than the
// timeout), and runs again after: the call ends with the upstream's
// deadline as its cause.
func TestCallClockStopsWhileAsking(t *testing.T) {
	ctx, cancel := withCallClock(callctx.WithAsker(t.Context(), slowAsker{1500 * time.Millisecond}), time.Second)
	defer cancel()
	if _, err := callctx.Ask(ctx, methodElicit, json.RawMessage(`{}`)); err != nil || ctx.Err() != nil {
		t.Fatalf("asked through the clock: %v, ctx %v", err, ctx.Err())
	}
	<-ctx.Done()
	if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
		t.Fatalf("the call ended with cause %v, want the upstream's deadline", cause)
	}
	// Without an Asker, a plain deadline.
	plain, cancelPlain := withCallClock(t.Context(), time.Millisecond)
	defer cancelPlain()
	<-plain.Done()
	if !errors.Is(plain.Err(), context.DeadlineExceeded) || callctx.CanAsk(plain) {
		t.Fatalf("without an Asker: %v, can ask %v", plain.Err(), callctx.CanAsk(plain))
	}
}

// completer is an Asker that records the completions it is told of.
type completer struct {
	slowAsker
	mu   sync.Mutex
	done []string
}

func (c *completer) ElicitationComplete(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = append(c.done, id)
}

// TestElicitationCompleteRelayed: a 2025 server's
// notifications/elicitation/complete goes, once, to the Asker that was put
// that URL-mode elicitation (through the call's clock); a form elicitation
// or one without an id is not remembered, and no more than maxElicited are.
func TestElicitationCompleteRelayed(t *testing.T) {
	c := &mcpClient{calls: map[int64]*inflight{}, tokens: map[string]*inflight{}, elicited: map[string]callctx.ElicitationCompleter{}}
	to := &completer{}
	ctx, cancel := withCallClock(callctx.WithAsker(t.Context(), to), time.Minute)
	defer cancel()
	c.elicitedURL(ctx, json.RawMessage(`{"mode":"url","url":"https://a.example/x","elicitationId":"e-1","message":"m"}`))
	c.elicitedURL(ctx, json.RawMessage(`{"message":"form","requestedSchema":{"type":"object"},"elicitationId":"e-2"}`))
	c.elicitedURL(ctx, json.RawMessage(`{"mode":"url","url":"https://a.example/x","message":"m"}`))
	if len(c.elicited) != 1 {
		t.Fatalf("remembered %v", c.elicited)
	}
	done := &jsonrpc.Message{Method: "notifications/elicitation/complete", Params: json.RawMessage(`{"elicitationId":"e-1"}`)}
	c.notification(done)
	c.notification(done)
	c.notification(&jsonrpc.Message{Method: "notifications/elicitation/complete", Params: json.RawMessage(`{"elicitationId":"e-2"}`)})
	if strings.Join(to.done, ",") != "e-1" {
		t.Fatalf("the client was told %v", to.done)
	}
	for i := range maxElicited + 10 {
		c.elicitedURL(ctx, json.RawMessage(fmt.Sprintf(`{"mode":"url","url":"https://a.example/x","elicitationId":"e-%d","message":"m"}`, i)))
	}
	if len(c.elicited) != maxElicited {
		t.Fatalf("%d remembered, want at most %d", len(c.elicited), maxElicited)
	}
}
