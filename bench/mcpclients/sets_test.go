package mcpclients

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/bench/internal/toolsvc"
)

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// TestGoSDKSeesOnlyTheSet: the Go MCP SDK client configured with a tool
// set's URL (/mcp/sets/{set}, docs/OPERATIONS.md "Tool sets"), on both
// revisions, lists exactly the set's tools, calls one, and finds a tool
// outside the set unknown.
func TestGoSDKSeesOnlyTheSet(t *testing.T) {
	bin, root := build(t)
	const key = "go-sdk-sets-test-key-000001"
	auth := filepath.Join(t.TempDir(), "auth.yaml")
	file := `tool_sets:
  - name: status
    include:
      - tool: get-sync-*
api_keys:
  - key: "` + key + `"
    subject: agent
    tenant: acme
    permissions: ["*"]
`
	if err := os.WriteFile(auth, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	proc, err := toolsvc.Start(t.Context(), toolsvc.Options{Binary: bin, DB: filepath.Join(t.TempDir(), "toolsvc.db"),
		KnowledgeDir: filepath.Join(root, "examples", "knowledge"), AuthFile: auth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Stop)
	for _, revision := range []string{modern, "2025-11-25"} {
		t.Run(revision, func(t *testing.T) {
			c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-sets", Version: "1.8.0"}, nil)
			cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + proc.HTTPAddr + "/mcp/sets/status",
				HTTPClient: &http.Client{Transport: bearer{key}}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: revision})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if v := cs.InitializeResult().ProtocolVersion; v != revision {
				t.Fatalf("negotiated %s, want %s", v, revision)
			}
			var names []string
			for tl, err := range cs.Tools(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tl.Name)
			}
			if !slices.Equal(names, []string{"get-sync-status"}) {
				t.Fatalf("the set lists %v, want [get-sync-status]", names)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get-sync-status", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("a tool of the set: %v %+v", err, res)
			}
			res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search-memories", Arguments: map[string]any{"query": "x"}})
			if err == nil && !res.IsError || err != nil && !strings.Contains(err.Error(), "unknown tool") {
				t.Fatalf("a tool outside the set: %v %+v, want an unknown tool", err, res)
			}
		})
	}
}
