package mcpbridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testproto"
)

// askServices serves the built-in tools and the test-only query-client
// (testdata/asktool.proto), which puts the question of its arguments to
// the client that made the call (callctx.Ask) as many times as asked, and
// answers with the client's answers: what an upstream MCP tool does when
// its server asks.
func askServices(t *testing.T) server.ServicesFunc {
	c := testproto.Compile(t, "testdata", "asktool.proto")
	desc := c.Service("QuestionService", map[string]testproto.Handler{"QueryClient": func(ctx context.Context, req, resp *dynamicpb.Message) error {
		f := req.Descriptor().Fields()
		method, params := req.Get(f.ByName("method")).String(), req.Get(f.ByName("params_json")).String()
		times := int(req.Get(f.ByName("times")).Int())
		data := dynamicpb.NewMessage(resp.Descriptor().Fields().ByName("data").Message())
		answers := data.Mutable(data.Descriptor().Fields().ByName("answers_json")).List()
		for i := 0; i < max(times, 1); i++ {
			answer, err := callctx.Ask(ctx, method, json.RawMessage(params))
			if err != nil {
				return err
			}
			answers.Append(protoreflect.ValueOfString(string(answer)))
			callctx.Progress(ctx, float64(i+1), float64(max(times, 1)), "answered")
		}
		resp.Set(resp.Descriptor().Fields().ByName("data"), protoreflect.ValueOfMessage(data))
		testproto.SetMessage(resp, "agent_hints", hints.New().Evidence(hints.Evidence{Name: "test", Value: 1, Weight: 1}).Quality(hints.QualityHigh).Build("test"))
		return nil
	}})
	return func(ctx context.Context, d server.Deps) ([]registry.Service, func(), error) {
		svcs, cleanup, err := server.Builtin(ctx, d)
		return append(svcs, registry.Service{Desc: desc, Files: c.Files}), cleanup, err
	}
}

// The questions of the tests, as the tool passes them to the client.
const (
	formQuestion = `{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`
	// URL mode: 2025-11-25 has elicitationId, 2026-07-28 removed it.
	urlQuestion2025  = `{"mode":"url","message":"Sign in","url":"https://auth.example.test/consent?x=1","elicitationId":"e-1"}`
	urlQuestion2026  = `{"mode":"url","message":"Sign in","url":"https://auth.example.test/consent?x=1"}`
	samplingQuestion = `{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],"maxTokens":16}`
)

// bearer adds an Authorization header to every request, and counts the
// requests that answer a question: 2025 responses to toolsvc's questions,
// 2026 follow-ups carrying requestState.
type bearer struct {
	key                  string
	rt                   http.RoundTripper
	responses, followUps *atomic.Int32
	// elsewhere, when set, is the host (another replica) the answers and
	// follow-ups go to, as a balancer that does not pin clients may send
	// them.
	elsewhere string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	if r.Body != nil && b.responses != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		answer := false
		if bytes.Contains(body, []byte(`"id":"toolsvc-ask-`)) && !bytes.Contains(body, []byte(`"method"`)) {
			b.responses.Add(1)
			answer = true
		}
		if bytes.Contains(body, []byte(`"requestState"`)) && bytes.Contains(body, []byte(`"inputResponses"`)) {
			b.followUps.Add(1)
			answer = true
		}
		if answer && b.elsewhere != "" {
			r.URL.Host, r.Host = b.elsewhere, b.elsewhere
		}
	}
	return b.rt.RoundTrip(r)
}

// goAsker is a go-sdk 1.8 client that answers elicitation (form and URL
// mode) and sampling, recording what it was asked.
type goAsker struct {
	elsewhere            string
	asked                atomic.Int32
	responses, followUps atomic.Int32
	seen                 atomic.Value // the last question's params, as JSON
}

func (g *goAsker) options(capable bool) *mcp.ClientOptions {
	if !capable {
		return &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	}
	return &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			n := g.asked.Add(1)
			b, _ := json.Marshal(req.Params)
			g.seen.Store(string(b))
			if req.Params.Mode == "url" {
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": fmt.Sprintf("Ada %d", n)}}, nil
		},
		// Sampling is deprecated (SEP-2577) but served: an upstream may still ask.
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) { //nolint:staticcheck // deprecated, still in the revision
			g.asked.Add(1)
			//nolint:staticcheck // deprecated, still in the revision
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "four"}}, nil
		},
	}
}

// connectGo connects a go-sdk client to srv's /mcp in revision.
func connectGo(t *testing.T, url, revision string, g *goAsker, capable bool) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{keyAll, http.DefaultTransport, &g.responses, &g.followUps, g.elsewhere}}
	opts := g.options(capable)
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-ask", Version: "1.8.0"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1},
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

// queryClient calls query-client and returns its answers, or the
// ToolError's message when the result is an error.
func queryClient(t *testing.T, cs *mcp.ClientSession, method, params string, times int) (answers []map[string]any, toolError string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "query-client",
		Arguments: map[string]any{"method": method, "paramsJson": params, "times": times}})
	if err != nil {
		t.Fatalf("tools/call %s: %v", method, err)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Data struct {
			AnswersJSON []string `json:"answersJson"`
		} `json:"data"`
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	}
	if err := json.Unmarshal(sc, &out); err != nil {
		t.Fatalf("structuredContent %s: %v", sc, err)
	}
	if res.IsError {
		return nil, out.Code + ": " + out.Message
	}
	for _, a := range out.Data.AnswersJSON {
		var m map[string]any
		if err := json.Unmarshal([]byte(a), &m); err != nil {
			t.Fatalf("answer %q: %v", a, err)
		}
		answers = append(answers, m)
	}
	return answers, ""
}

// TestAskGoClient: a tool's questions reach a real go-sdk 1.8 client in
// both revisions (2025-11-25 as server-to-client requests on the call's
// event stream, 2026-07-28 as input_required results and follow-ups), are
// answered by its handlers (form and URL elicitation, sampling) and the
// answers come back to the tool unchanged; a client that declared
// neither capability is refused with a ToolError naming it.
func TestAskGoClient(t *testing.T) {
	t.Parallel()
	srv := newAuthServerWith(t, askServices(t), nil)
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			g := &goAsker{}
			cs := connectGo(t, srv.HTTP+"/mcp", rev, g, true)

			answers, te := queryClient(t, cs, "elicitation/create", formQuestion, 2)
			if te != "" || len(answers) != 2 || answers[0]["action"] != "accept" ||
				answers[0]["content"].(map[string]any)["name"] != "Ada 1" || answers[1]["content"].(map[string]any)["name"] != "Ada 2" {
				t.Fatalf("form elicitation = %v %s", answers, te)
			}
			url := urlQuestion2025
			if rev == "2026-07-28" {
				url = urlQuestion2026
			}
			answers, te = queryClient(t, cs, "elicitation/create", url, 1)
			if te != "" || len(answers) != 1 || answers[0]["action"] != "accept" {
				t.Fatalf("URL elicitation = %v %s", answers, te)
			}
			if seen, _ := g.seen.Load().(string); !strings.Contains(seen, `"url":"https://auth.example.test/consent?x=1"`) {
				t.Fatalf("the client was asked %s, want the URL unchanged", seen)
			}
			answers, te = queryClient(t, cs, "sampling/createMessage", samplingQuestion, 1)
			if te != "" || len(answers) != 1 || answers[0]["model"] != "test-model" || answers[0]["content"].(map[string]any)["text"] != "four" {
				t.Fatalf("sampling = %v %s", answers, te)
			}

			// Each question went as the revision has it.
			responses, followUps := g.responses.Load(), g.followUps.Load()
			if rev == "2025-11-25" && (responses != 4 || followUps != 0) || rev == "2026-07-28" && (responses != 0 || followUps != 4) {
				t.Fatalf("%d responses to questions, %d follow-ups with requestState for 4 questions in %s", responses, followUps, rev)
			}

			bare := connectGo(t, srv.HTTP+"/mcp", rev, &goAsker{}, false)
			if _, te := queryClient(t, bare, "elicitation/create", formQuestion, 1); !strings.Contains(te, "did not declare the elicitation capability") {
				t.Fatalf("elicitation of a client without the capability = %q", te)
			}
			if _, te := queryClient(t, bare, "sampling/createMessage", samplingQuestion, 1); !strings.Contains(te, "did not declare the sampling capability") {
				t.Fatalf("sampling of a client without the capability = %q", te)
			}
		})
	}
}

// TestAskOnEveryReplica: two replicas sharing one Redis and one database;
// a real go-sdk client's call runs on replica A, and a balancer sends
// every answer to replica B: the 2025 client's responses to A's questions
// (B hears no question of its own and tells the fleet; A takes it), and
// the 2026-07-28 follow-ups with requestState (B forwards each to A, A
// answers it there, B relays the result or the next input_required). The
// call's state stays with A for its whole life; another principal's
// follow-up on B is told the state names no call.
func TestAskOnEveryReplica(t *testing.T) {
	t.Parallel()
	cfg := fleet(t)
	a := newAuthServerWith(t, askServices(t), cfg)
	b := newAuthServerWith(t, askServices(t), cfg)
	bu, err := url.Parse(b.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			g := &goAsker{elsewhere: bu.Host}
			cs := connectGo(t, a.HTTP+"/mcp", rev, g, true)
			answers, te := queryClient(t, cs, "elicitation/create", formQuestion, 2)
			if te != "" || len(answers) != 2 || answers[1]["content"].(map[string]any)["name"] != "Ada 2" {
				t.Fatalf("form elicitation across replicas = %v %s", answers, te)
			}
			answers, te = queryClient(t, cs, "sampling/createMessage", samplingQuestion, 1)
			if te != "" || len(answers) != 1 || answers[0]["model"] != "test-model" {
				t.Fatalf("sampling across replicas = %v %s", answers, te)
			}
			if n := g.responses.Load() + g.followUps.Load(); n != 3 {
				t.Fatalf("%d answers went to replica B, want 3", n)
			}
		})
	}

	// A follow-up of another principal, on B, for a call of A.
	c := newClient(t, a.HTTP)
	c.header.Set("Authorization", "Bearer "+keyAll)
	caps := `"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}`
	r := modernCall(t, c, "1", "tools/call", "query-client", `"name":"query-client","arguments":{"method":"elicitation/create","paramsJson":`+strconv.Quote(formQuestion)+`},`+modernMetaWith(caps))
	var ir struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &ir) != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 1 || ir.RequestState == "" {
		t.Fatalf("first round = %+v %s", r.Error, r.Result)
	}
	other := newClient(t, b.HTTP)
	other.header.Set("Authorization", "Bearer "+keyOther)
	follow := `"name":"query-client","arguments":{"method":"elicitation/create","paramsJson":` + strconv.Quote(formQuestion) +
		`},"requestState":` + strconv.Quote(ir.RequestState) + `,"inputResponses":{"q1":{"action":"decline"}},` + modernMetaWith(caps)
	if r := modernCall(t, other, "2", "tools/call", "query-client", follow); r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "names no tool call waiting for input") {
		t.Fatalf("another principal's follow-up = %+v %s", r.Error, r.Result)
	}
	// The caller's own, on B, goes on.
	c.url = b.HTTP + "/mcp"
	r = modernCall(t, c, "3", "tools/call", "query-client", follow)
	var res toolResult
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.IsError {
		t.Fatalf("the caller's follow-up on B = %+v %s", r.Error, r.Result)
	}
	if got := res.StructuredContent["data"].(map[string]any)["answersJson"].([]any); len(got) != 1 || got[0] != `{"action":"decline"}` {
		t.Fatalf("answers = %v", got)
	}
	// Answered once: the state names no call any more.
	if r := modernCall(t, c, "4", "tools/call", "query-client", follow); r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("a second follow-up = %+v %s", r.Error, r.Result)
	}

	// The replica running the call is gone: the follow-up on B is told the
	// state names no call (B's forward goes unacknowledged).
	c.url = a.HTTP + "/mcp"
	r = modernCall(t, c, "5", "tools/call", "query-client", `"name":"query-client","arguments":{"method":"elicitation/create","paramsJson":`+strconv.Quote(formQuestion)+`},`+modernMetaWith(caps))
	if r.Error != nil || json.Unmarshal(r.Result, &ir) != nil || ir.ResultType != "input_required" {
		t.Fatalf("first round = %+v %s", r.Error, r.Result)
	}
	a.MCP().Close()
	c.url = b.HTTP + "/mcp"
	follow = `"name":"query-client","arguments":{"method":"elicitation/create","paramsJson":` + strconv.Quote(formQuestion) +
		`},"requestState":` + strconv.Quote(ir.RequestState) + `,"inputResponses":{"q1":{"action":"decline"}},` + modernMetaWith(caps)
	if r := modernCall(t, c, "6", "tools/call", "query-client", follow); r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "names no tool call waiting for input") {
		t.Fatalf("a follow-up of a call whose replica is gone = %+v %s", r.Error, r.Result)
	}
}

// modernMetaWith is the _meta of a 2026-07-28 request whose client
// capabilities are caps (a member, `"...clientCapabilities":{...}`).
func modernMetaWith(caps string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"ask-test","version":"1.0"},` + caps + `}`
}

// TestAskTypeScriptClients: the official TypeScript clients answer the
// questions of query-client on toolsvc's Streamable HTTP endpoint: the SDK
// v1 (2025-11-25, server-to-client requests on the call's stream) and the
// client v2 pinned to 2026-07-28 (input_required, its multi-round-trip
// driver's follow-ups): form and URL elicitation and sampling answered by
// their handlers, and each refused clearly when it declared neither
// capability (test/mcp/ask.mjs).
func TestAskTypeScriptClients(t *testing.T) {
	root, _ := nodeSetup(t)
	srv := newAuthServerWith(t, askServices(t), nil)
	for _, sdk := range []string{"v1", "v2"} {
		for _, bare := range []bool{false, true} {
			name := sdk
			args := []string{"ask.mjs", "--sdk", sdk}
			if bare {
				name += " without capabilities"
				args = append(args, "--bare")
			}
			t.Run(name, func(t *testing.T) {
				cmd := exec.Command(node22, append(args, srv.HTTP+"/mcp")...)
				cmd.Dir = filepath.Join(root, "test", "mcp")
				cmd.Env = append(os.Environ(), "MCP_TOKEN="+keyAll)
				out := run(t, cmd, 2*time.Minute)
				if !bytes.Contains(out, []byte(" 0 failed")) || bytes.Contains(out, []byte("FAIL")) {
					t.Fatalf("client output:\n%s", out)
				}
				wants := []string{"form elicitation answered twice", "URL elicitation answered", "sampling answered"}
				if bare {
					wants = []string{"elicitation refused", "sampling refused"}
				}
				for _, want := range wants {
					if !bytes.Contains(out, []byte(want)) {
						t.Errorf("no %q in the client's output:\n%s", want, out)
					}
				}
				t.Logf("%s", out)
			})
		}
	}
}

// TestAskStdio: over stdio, a real go-sdk 1.8 client answers the
// questions of query-client in both revisions: 2025-11-25 requests on
// stdout answered on stdin, 2026-07-28 input_required results and
// follow-ups.
func TestAskStdio(t *testing.T) {
	t.Parallel()
	srv := newAuthServerWith(t, askServices(t), nil)
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- srv.MCP().ServeStdio(context.Background(), inR, outW, "Bearer "+keyAll)
				outW.Close()
			}()
			g := &goAsker{}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-ask-stdio", Version: "1.8.0"}, g.options(true)).
				Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != rev {
				t.Fatalf("negotiated %s, want %s", got, rev)
			}
			answers, te := queryClient(t, cs, "elicitation/create", formQuestion, 2)
			if te != "" || len(answers) != 2 || answers[1]["content"].(map[string]any)["name"] != "Ada 2" {
				t.Fatalf("form elicitation over stdio = %v %s", answers, te)
			}
			answers, te = queryClient(t, cs, "sampling/createMessage", samplingQuestion, 1)
			if te != "" || len(answers) != 1 || answers[0]["model"] != "test-model" {
				t.Fatalf("sampling over stdio = %v %s", answers, te)
			}
			_ = cs.Close()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("ServeStdio did not return after the client closed")
			}
		})
	}
}

// TestAskCancelled: a call cancelled while its question waits withdraws
// the question (notifications/cancelled with the question's id, on the
// call's stream) and ends; an answer arriving after it is ignored.
func TestAskCancelled(t *testing.T) {
	t.Parallel()
	srv := newAuthServerWith(t, askServices(t), nil)
	c := startStdio(t, srv.MCP(), "Bearer "+keyAll)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"desk","version":"1.0"}}}`)
	if r := c.next(); r.Error != nil {
		t.Fatalf("initialize: %+v", r.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"query-client","arguments":{"method":"elicitation/create","paramsJson":` + strconv.Quote(formQuestion) + `}}}`)
	q := c.next()
	if q.Method != "elicitation/create" || !strings.HasPrefix(string(q.ID), `"toolsvc-ask-`) || string(q.Params) != formQuestion {
		t.Fatalf("question = %s %s %s, want elicitation/create with the tool's params unchanged", q.ID, q.Method, q.Params)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	withdrawn := c.next()
	if withdrawn.Method != "notifications/cancelled" || !strings.Contains(string(withdrawn.Params), string(q.ID)) {
		t.Fatalf("after the call's cancellation = %s %s, want the question withdrawn", withdrawn.Method, withdrawn.Params)
	}
	// The cancelled call answers (the client may ignore it); a late
	// answer to the withdrawn question is ignored.
	if r := c.next(); string(r.ID) != "2" {
		t.Fatalf("the cancelled call answered %s %s", r.ID, r.Result)
	}
	c.send(`{"jsonrpc":"2.0","id":` + string(q.ID) + `,"result":{"action":"cancel"}}`)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if r := c.next(); string(r.ID) != "3" || r.Error != nil {
		t.Fatalf("ping after = %s %+v", r.ID, r.Error)
	}
}

// TestAskCannotReach: a 2025 client that declared the capability but
// whose request cannot carry a question (Accept: application/json only),
// and any client of a stateless server, are told why, and the tool is not
// left waiting; a 2026 follow-up with a requestState toolsvc did not issue
// is invalid params.
func TestAskCannotReach(t *testing.T) {
	t.Parallel()
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"query-client","arguments":{"method":"elicitation/create","paramsJson":` + strconv.Quote(formQuestion) + `}}}`
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"json-only","version":"1.0"}}}`
	toolErr := func(t *testing.T, resp *http.Response, body []byte) string {
		t.Helper()
		msgs := decodeMessages(t, resp.Header.Get("Content-Type"), body)
		var res toolResult
		if err := json.Unmarshal(msgs[len(msgs)-1].Result, &res); err != nil || !res.IsError {
			t.Fatalf("tools/call = %s, want a ToolError", body)
		}
		return res.StructuredContent["message"].(string)
	}

	srv := newAuthServerWith(t, askServices(t), nil)
	c := newClient(t, srv.HTTP)
	c.header.Set("Authorization", "Bearer "+keyAll)
	resp, body := c.post(initialize, nil)
	c.session = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || c.session == "" {
		t.Fatalf("initialize: HTTP %d %s", resp.StatusCode, body)
	}
	resp, body = c.post(call, http.Header{"Accept": {"application/json"}})
	if msg := toolErr(t, resp, body); !strings.Contains(msg, "cannot carry a question") || !strings.Contains(msg, "text/event-stream") {
		t.Fatalf("JSON-only client: %q", msg)
	}

	stateless := newAuthServerWith(t, askServices(t), func(c *server.Config) { c.MCP.Stateless = true })
	s := newClient(t, stateless.HTTP)
	s.header.Set("Authorization", "Bearer "+keyAll)
	s.post(initialize, nil)
	resp, body = s.post(call, nil)
	if msg := toolErr(t, resp, body); !strings.Contains(msg, "stateless server") {
		t.Fatalf("stateless server: %q", msg)
	}

	m := newClient(t, srv.HTTP)
	m.header.Set("Authorization", "Bearer "+keyAll)
	for _, state := range []string{"forged", "0123456789abcdef01234567.0123456789abcdef0123456789abcdef"} {
		r := modernCall(t, m, "5", "tools/call", "query-client", `"name":"query-client","arguments":{"method":"elicitation/create","paramsJson":"{}"},"requestState":"`+state+`","inputResponses":{},`+modernMetaWith(`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}`))
		if r.Error == nil || r.Error.Code != -32602 {
			t.Fatalf("requestState %q = %+v %s, want invalid params", state, r.Error, r.Result)
		}
	}
}

// TestAskProgress: a 2026-07-28 call that asks keeps reporting progress:
// each notification goes on the stream of the request waiting on the call
// at the time (here the follow-up's), before its answer.
func TestAskProgress(t *testing.T) {
	t.Parallel()
	srv := newAuthServerWith(t, askServices(t), nil)
	c := newClient(t, srv.HTTP)
	c.header.Set("Authorization", "Bearer "+keyAll)
	meta := `"_meta":{"progressToken":"p-1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"ask-test","version":"1.0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	args := `"name":"query-client","arguments":{"method":"elicitation/create","paramsJson":` + strconv.Quote(formQuestion) + `},`
	resp, body := c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+args+meta+`}}`, modernHeaders("tools/call", "query-client"))
	msgs := decodeMessages(t, resp.Header.Get("Content-Type"), body)
	var ir struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if last := msgs[len(msgs)-1]; last.Error != nil || json.Unmarshal(last.Result, &ir) != nil || ir.ResultType != "input_required" {
		t.Fatalf("first round = %s", body)
	}
	resp, body = c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{`+args+`"requestState":`+strconv.Quote(ir.RequestState)+
		`,"inputResponses":{"q1":{"action":"accept","content":{"name":"Ada"}}},`+meta+`}}`, modernHeaders("tools/call", "query-client"))
	msgs = decodeMessages(t, resp.Header.Get("Content-Type"), body)
	if len(msgs) != 2 || msgs[0].Method != "notifications/progress" || !strings.Contains(string(msgs[0].Params), `"progressToken":"p-1"`) {
		t.Fatalf("follow-up = %s, want the call's progress then its result", body)
	}
	var res toolResult
	if json.Unmarshal(msgs[1].Result, &res) != nil || res.IsError {
		t.Fatalf("result = %s", msgs[1].Result)
	}
}
