package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

var (
	npmOnce sync.Once
	npmErr  string
)

// tsUpstream is test/mcp/upstream2.mjs, a TypeScript SDK v2 server,
// with test/mcp's locked packages installed.
func tsUpstream(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a Node MCP server; skipped in -short mode")
	}
	testenv.LookPath(t, "node")
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "test", "mcp"))
	if err != nil {
		t.Fatal(err)
	}
	npmOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server", "package.json")); err == nil {
			return
		}
		testenv.LookPath(t, "npm")
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = string(out) + err.Error()
		}
	})
	if npmErr != "" {
		t.Fatalf("npm ci in test/mcp: %s", npmErr)
	}
	return filepath.Join(dir, "upstream2.mjs")
}

// TestTypeScriptUpstream2026: a server of the TypeScript SDK v2 that
// refuses every 2025 opening is discovered and spoken to in 2026-07-28
// over stdio; its input_required questions (form and URL elicitation,
// sampling) reach the call's client and the answers reach the tool with
// the server's requestState; its progress is relayed.
func TestTypeScriptUpstream2026(t *testing.T) {
	script := tsUpstream(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	c, err := newMCPClient(Config{Name: "ts", MCP: &MCPServer{Command: []string{node, script}, MaxResponseBytes: DefaultMaxResponseBytes}, TLS: TLS{Mode: "plaintext"}},
		slog.New(slog.DiscardHandler), func(string, ...json.RawMessage) {})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	asker := &testAsker{}
	ctx := callctx.WithAsker(context.Background(), asker)
	out, err := callTool(ctx, c, "confirm")
	if err != nil {
		t.Fatal(err)
	}
	if rev, how := c.protocolState(); rev != Revision2026 || how != "discovered (server/discover)" {
		t.Fatalf("revision %q chosen %q", rev, how)
	}
	if a, _ := json.Marshal(out["answer"]); string(a) != `{"action":"accept","content":{"ok":true}}` || out["state"] != "ts-round-1" {
		t.Fatalf("form answer %s, state %v", a, out["state"])
	}
	for _, name := range []string{"login", "summarize"} {
		if _, err := callTool(ctx, c, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	want := []string{methodElicit + ": Delete 3 files?", methodElicit + " url: https://archive.example/login?state=abc", methodSample + ": Summarize: the sky is blue."}
	if got := asker.questions(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the client was asked\n%s", strings.Join(got, "\n"))
	}
	// A call whose client cannot be asked declares no capability: the
	// server refuses it (-32021), which the caller reads as such.
	u := &Upstream{cfg: Config{Name: "ts"}}
	_, err = callTool(context.Background(), c, "confirm")
	if e := u.mapMCPError(context.Background(), err); err == nil || !strings.Contains(e.Error(), "the client that made this call cannot be asked") {
		t.Fatalf("a client that cannot be asked: %v (%v)", err, e)
	}
	var steps []string
	var mu sync.Mutex
	pctx := callctx.WithProgress(context.Background(), func(done, total float64, message string) {
		mu.Lock()
		steps = append(steps, fmt.Sprintf("%g/%g %s", done, total, message))
		mu.Unlock()
	})
	if out, err := callTool(pctx, c, "count"); err != nil || out["token"] != true {
		t.Fatalf("count: %v %v", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(steps, ",") != "1/2 step 1,2/2 step 2" {
		t.Fatalf("progress relayed: %q", steps)
	}
}
