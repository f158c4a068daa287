package mcpbridge_test

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// setsAuthFile defines the tool set "memory-read" (docs/OPERATIONS.md,
// "Tool sets") and a key holding every permission.
const setsAuthFile = `tool_sets:
  - name: memory-read
    include:
      - tag: memory
        category: query
api_keys:
  - key: "` + keyAll + `"
    subject: agent-a
    tenant: acme
    permissions: ["*"]
    identifiers: {user_id: user-a, project_id: p1, team_id: t1, org_id: o1}
`

// newSetsServer starts a server with setsAuthFile.
func newSetsServer(tb testing.TB, configure func(*server.Config)) *testserver.Server {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "auth.yaml")
	if err := os.WriteFile(path, []byte(setsAuthFile), 0o600); err != nil {
		tb.Fatal(err)
	}
	return testserver.New(tb, testserver.Options{Configure: func(c *server.Config) {
		c.AuthFile = path
		if configure != nil {
			configure(c)
		}
	}})
}

// TestTypeScriptClientsSeeOnlyTheSet runs test/mcp/sets.mjs: the official
// TypeScript SDK clients (v1 @modelcontextprotocol/sdk, and v2
// @modelcontextprotocol/client pinned to 2026-07-28 and in its default
// 2025 handshake) configured with a tool set's URL list exactly the set's
// tools, call one, and find a tool outside the set unknown.
func TestTypeScriptClientsSeeOnlyTheSet(t *testing.T) {
	root, _ := nodeSetup(t)
	dir := filepath.Join(root, "test", "mcp")
	srv := newSetsServer(t, nil)
	for _, kind := range []string{"v1", "v2-modern", "v2-default"} {
		t.Run(kind, func(t *testing.T) {
			node := "node"
			if kind != "v1" {
				node = node22
			}
			cmd := exec.Command(node, "sets.mjs", "--client", kind, srv.HTTP+"/mcp/sets/memory-read")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "MCP_TOKEN="+keyAll, "EXPECT_TOOLS=search-memories", "OUTSIDE=get-sync-status")
			out := run(t, cmd, 2*time.Minute)
			if !bytes.Contains(out, []byte(" 0 failed")) || bytes.Contains(out, []byte("FAIL")) ||
				!bytes.Contains(out, []byte("holds exactly search-memories")) || !bytes.Contains(out, []byte("is an unknown tool")) {
				t.Fatalf("client output:\n%s", out)
			}
			t.Logf("%s", out)
		})
	}
}

// TestToolSetOnTwoReplicas: on a fleet of two replicas (PostgreSQL and
// Redis), a session opened at a tool set's endpoint on one replica lists
// and calls that set only on the other, and is not a session of /mcp
// there.
func TestToolSetOnTwoReplicas(t *testing.T) {
	t.Parallel()
	cfg := fleet(t)
	a := newSetsServer(t, cfg)
	b := newSetsServer(t, cfg)
	c := newClient(t, a.HTTP)
	c.url = a.HTTP + "/mcp/sets/memory-read"
	c.header.Set("Authorization", "Bearer "+keyAll)
	c.initialize("fleet-sets")

	c.url = b.HTTP + "/mcp/sets/memory-read"
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	c.result("tools/list", map[string]any{}, &list)
	if len(list.Tools) != 1 || list.Tools[0].Name != "search-memories" {
		t.Fatalf("tools/list on B of A's set session: %+v", list)
	}
	if r := c.call("tools/call", map[string]any{"name": "get-sync-status", "arguments": map[string]any{}}); r.Error == nil || !strings.Contains(r.Error.Message, "unknown tool") {
		t.Fatalf("a tool outside the set on B: %+v", r)
	}
	var res toolResult
	c.result("tools/call", map[string]any{"name": "search-memories", "arguments": map[string]any{"query": "x", "layers": []string{"company"}}}, &res)
	if res.IsError {
		t.Fatalf("a tool of the set on B: %+v", res)
	}
	c.url = b.HTTP + "/mcp"
	if st, _ := httpStatus(c, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, nil); st != http.StatusNotFound {
		t.Fatalf("the set's session on B's /mcp: HTTP %d, want 404", st)
	}
}
