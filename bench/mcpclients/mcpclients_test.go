package mcpclients

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gojsonschema "github.com/google/jsonschema-go/jsonschema"
	m3client "github.com/mark3labs/mcp-go/client"
	m3transport "github.com/mark3labs/mcp-go/client/transport"
	m3mcp "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolsvc/toolsvc/bench/internal/toolsvc"
)

const modern = "2026-07-28"

// peer is one client library's connection, reduced to what the checks
// need; tools and results are their JSON as the library decoded them.
type peer interface {
	version() string
	tools(ctx context.Context) ([]json.RawMessage, error)
	call(ctx context.Context, name string, args map[string]any) (json.RawMessage, error)
	resources(ctx context.Context) ([]string, error)
	read(ctx context.Context, uri string) (string, error)
	close()
}

var (
	buildOnce sync.Once
	binary    string
	repo      string
	buildErr  error
)

// build compiles toolsvc once per test binary.
func build(t *testing.T) (bin, root string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs toolsvc")
	}
	buildOnce.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			buildErr = err
			return
		}
		if repo, buildErr = toolsvc.FindRepo(wd); buildErr != nil {
			return
		}
		dir, err := os.MkdirTemp("", "mcpclients")
		if err != nil {
			buildErr = err
			return
		}
		binary, buildErr = toolsvc.Build(context.Background(), repo, dir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary, repo
}

// recorder is an HTTP client that notes every JSON-RPC method a client
// posts and the Mcp-Method header it sent with it.
type recorder struct {
	mu      sync.Mutex
	methods []string
	bad     []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
			ID     any    `json:"id"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method != "" {
			r.mu.Lock()
			r.methods = append(r.methods, m.Method)
			if m.ID != nil && req.Header.Get("Mcp-Method") != m.Method {
				r.bad = append(r.bad, m.Method+" with Mcp-Method "+req.Header.Get("Mcp-Method"))
			}
			r.mu.Unlock()
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestClients2026 runs both libraries against both transports of a real
// toolsvc; every run must stay on 2026-07-28.
func TestClients2026(t *testing.T) {
	bin, root := build(t)
	knowledge := filepath.Join(root, "examples", "knowledge")
	type target struct {
		name  string
		extra []string // flags of toolsvc serve; nil with stdio
		stdio bool
	}
	targets := []target{
		{name: "serve"},
		{name: "serve stateless", extra: []string{"--mcp-stateless"}},
		{name: "mcp stdio", stdio: true},
	}
	libs := []struct {
		name string
		http func(t *testing.T, url string, hc *http.Client) peer
		std  func(t *testing.T, bin string, args []string) peer
	}{
		{"go-sdk", goSDKHTTP, goSDKStdio},
		{"mcp-go", mark3HTTP, mark3Stdio},
	}
	for _, lib := range libs {
		for _, tg := range targets {
			t.Run(lib.name+" "+tg.name, func(t *testing.T) {
				db := filepath.Join(t.TempDir(), "toolsvc.db")
				var p peer
				rec := &recorder{}
				if tg.stdio {
					p = lib.std(t, bin, []string{"mcp", "--db", db, "--knowledge-dir", knowledge})
				} else {
					proc, err := toolsvc.Start(t.Context(), toolsvc.Options{Binary: bin, DB: db, KnowledgeDir: knowledge, Extra: tg.extra})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(proc.Stop)
					p = lib.http(t, "http://"+proc.HTTPAddr+"/mcp", &http.Client{Transport: rec})
				}
				t.Cleanup(p.close)
				exercise(t, p)
				if !tg.stdio {
					rec.mu.Lock()
					defer rec.mu.Unlock()
					if slices.Contains(rec.methods, "initialize") || !slices.Contains(rec.methods, "server/discover") {
						t.Errorf("methods sent %v: want server/discover and no initialize (no fallback)", rec.methods)
					}
					if len(rec.bad) > 0 {
						t.Errorf("requests without a matching Mcp-Method header: %v", rec.bad)
					}
				}
			})
		}
	}
}

// exercise is the same work for every client: the negotiated revision,
// every tool (sync-knowledge first, so the knowledge tools' examples find
// their items) with its first example, each structured result checked
// against the tool's outputSchema, and a knowledge resource read.
func exercise(t *testing.T, p peer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if v := p.version(); v != modern {
		t.Fatalf("negotiated %q, want %s", v, modern)
	}
	raw, err := p.tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type tool struct {
		Name         string          `json:"name"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Meta         struct {
			Examples []struct {
				Params            map[string]any `json:"params"`
				ExpectedErrorCode string         `json:"expectedErrorCode"`
			} `json:"examples"`
		} `json:"_meta"`
	}
	tools := make([]tool, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &tools[i]); err != nil {
			t.Fatal(err)
		}
	}
	if len(tools) < 10 {
		t.Fatalf("%d tools listed", len(tools))
	}
	slices.SortFunc(tools, func(a, b tool) int {
		switch {
		case a.Name == "sync-knowledge":
			return -1
		case b.Name == "sync-knowledge":
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, tl := range tools {
		if len(tl.OutputSchema) == 0 {
			t.Errorf("%s: no outputSchema", tl.Name)
			continue
		}
		schema, err := compile(tl.OutputSchema)
		if err != nil {
			t.Errorf("%s: outputSchema: %v", tl.Name, err)
			continue
		}
		goSchema, err := resolveGo(tl.OutputSchema)
		if err != nil {
			t.Errorf("%s: outputSchema (jsonschema-go): %v", tl.Name, err)
			continue
		}
		args := map[string]any{}
		wantErr := ""
		if len(tl.Meta.Examples) > 0 {
			if tl.Meta.Examples[0].Params != nil {
				args = tl.Meta.Examples[0].Params
			}
			wantErr = tl.Meta.Examples[0].ExpectedErrorCode
		}
		out, err := p.call(ctx, tl.Name, args)
		if err != nil {
			t.Errorf("%s: %v", tl.Name, err)
			continue
		}
		var res struct {
			StructuredContent any  `json:"structuredContent"`
			IsError           bool `json:"isError"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.StructuredContent == nil {
			t.Errorf("%s: result %s: %v", tl.Name, out, err)
			continue
		}
		if res.IsError != (wantErr != "") {
			t.Errorf("%s: isError %v, example expects error %q: %s", tl.Name, res.IsError, wantErr, out)
			continue
		}
		if err := schema.Validate(res.StructuredContent); err != nil {
			t.Errorf("%s: structuredContent does not match its outputSchema: %v", tl.Name, err)
		}
		if err := goSchema.Validate(res.StructuredContent); err != nil {
			t.Errorf("%s: structuredContent does not match its outputSchema (jsonschema-go): %v", tl.Name, err)
		}
	}
	uris, err := p.resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(uris, func(u string) bool { return strings.HasPrefix(u, "knowledge://") })
	if i < 0 {
		t.Fatalf("no knowledge:// resource among %v", uris)
	}
	text, err := p.read(ctx, uris[i])
	if err != nil || text == "" {
		t.Fatalf("read %s: %q %v", uris[i], text, err)
	}
}

// compile compiles an outputSchema (JSON Schema 2020-12).
func compile(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("schema.json")
}

// resolveGo resolves an outputSchema with jsonschema-go, the Go SDK's
// schema library, as a Go host would: without a loader, so a remote $ref
// would fail (TestRemoteRefsFail).
func resolveGo(raw json.RawMessage) (*gojsonschema.Resolved, error) {
	var s gojsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// TestRemoteRefsFail is why toolsvc's tools/list describes the result
// envelope by a short shape rather than a $ref to a published schema
// (docs/MCP.md, "What tools/list costs"): neither Go validator resolves a
// remote reference by default.
func TestRemoteRefsFail(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{"agentHints":{"$ref":"https://tools.example.com/schemas/agent-hints.json"}}}`)
	if _, err := resolveGo(raw); err == nil {
		t.Error("jsonschema-go resolved a remote $ref without a loader")
	}
	if _, err := compile(raw); err == nil {
		t.Error("santhosh-tekuri/jsonschema compiled a remote https $ref without a loader")
	}
}

// --- go-sdk ---

type goSDK struct{ cs *mcp.ClientSession }

func goSDKHTTP(t *testing.T, url string, hc *http.Client) peer {
	return goSDKConnect(t, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1})
}

func goSDKStdio(t *testing.T, bin string, args []string) peer {
	return goSDKConnect(t, &mcp.CommandTransport{Command: exec.Command(bin, args...)})
}

func goSDKConnect(t *testing.T, tr mcp.Transport) peer {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-e2e", Version: "1.8.0"}, nil)
	cs, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: modern})
	if err != nil {
		t.Fatal(err)
	}
	return goSDK{cs}
}

func (g goSDK) version() string { return g.cs.InitializeResult().ProtocolVersion }

func (g goSDK) tools(ctx context.Context) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for tl, err := range g.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(tl)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func (g goSDK) call(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	res, err := g.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (g goSDK) resources(ctx context.Context) ([]string, error) {
	var uris []string
	for r, err := range g.cs.Resources(ctx, nil) {
		if err != nil {
			return nil, err
		}
		uris = append(uris, r.URI)
	}
	return uris, nil
}

func (g goSDK) read(ctx context.Context, uri string) (string, error) {
	res, err := g.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(res.Contents) == 0 {
		return "", err
	}
	return res.Contents[0].Text, nil
}

func (g goSDK) close() { _ = g.cs.Close() }

// --- mark3labs/mcp-go ---

type mark3 struct{ c *m3client.Client }

func mark3HTTP(t *testing.T, url string, hc *http.Client) peer {
	t.Helper()
	c, err := m3client.NewStreamableHttpClient(url, m3transport.WithHTTPBasicClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	return mark3Init(t, c)
}

func mark3Stdio(t *testing.T, bin string, args []string) peer {
	t.Helper()
	c, err := m3client.NewStdioMCPClient(bin, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return mark3Init(t, c)
}

func mark3Init(t *testing.T, c *m3client.Client) peer {
	t.Helper()
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	req := m3mcp.InitializeRequest{}
	req.Params.ProtocolVersion = modern
	req.Params.ClientInfo = m3mcp.Implementation{Name: "mcp-go-e2e", Version: "1.2.1"}
	if _, err := c.Initialize(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	return mark3{c}
}

func (m mark3) version() string { return m.c.ProtocolVersion() }

func (m mark3) tools(ctx context.Context) ([]json.RawMessage, error) {
	res, err := m.c.ListTools(ctx, m3mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, 0, len(res.Tools))
	for _, tl := range res.Tools {
		b, err := json.Marshal(tl)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func (m mark3) call(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	req := m3mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := m.c.CallTool(ctx, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (m mark3) resources(ctx context.Context) ([]string, error) {
	res, err := m.c.ListResources(ctx, m3mcp.ListResourcesRequest{})
	if err != nil {
		return nil, err
	}
	uris := make([]string, 0, len(res.Resources))
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	return uris, nil
}

func (m mark3) read(ctx context.Context, uri string) (string, error) {
	req := m3mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := m.c.ReadResource(ctx, req)
	if err != nil || len(res.Contents) == 0 {
		return "", err
	}
	if tc, ok := res.Contents[0].(m3mcp.TextResourceContents); ok {
		return tc.Text, nil
	}
	b, _ := json.Marshal(res.Contents[0])
	return string(b), nil
}

func (m mark3) close() { _ = m.c.Close() }
