package mcpbridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/testkit/testproto"
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
		if bytes.Contains(body, []byte(`"id":"toolsvc-ask-`)) && !bytes.Contains(body, []byte(`"method"`)) {
			b.responses.Add(1)
		}
		if bytes.Contains(body, []byte(`"requestState"`)) && bytes.Contains(body, []byte(`"inputResponses"`)) {
			b.followUps.Add(1)
		}
	}
	return b.rt.RoundTrip(r)
}

// goAsker is a go-sdk 1.8 client that answers elicitation (form and URL
// mode) and sampling, recording what it was asked.
type goAsker struct {
	asked                atomic.Int32
	responses, followUps atomic.Int32
	seen  atomic.Value // the last question's params, as JSON
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
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			g.asked.Add(1)
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "four"}}, nil
		},
	}
}

// connectGo connects a go-sdk client to srv's /mcp in revision.
func connectGo(t *testing.T, url, revision string, g *goAsker, capable bool) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{keyAll, http.DefaultTransport, &g.responses, &g.followUps}}
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
