package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// TestLintEverythingExample: `toolsvc lint --upstreams` passes on
// examples/upstreams/everything.yaml, run against the real npm server
// (its command pointed at test/mcp's locked install): every tool served,
// the four tools of its granted resources and prompts among them, each with
// the permission the file grants.
func TestLintEverythingExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the npm MCP server-everything; skipped in -short mode")
	}
	testenv.LookPath(t, "node")
	dir := filepath.Join("..", "..", "test", "mcp")
	entry, err := filepath.Abs(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		testenv.LookPath(t, "npm")
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in test/mcp: %v\n%s", err, out)
		}
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "upstreams", "everything.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?m)^      command: .*$`).ReplaceAllLiteralString(string(example), "      command: [node, "+entry+", stdio]")
	path := filepath.Join(t.TempDir(), "upstreams.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"lint", "--knowledge-dir", repoKnowledge(t), "--upstreams", path}, nil, &out, &errOut)
	if code != 0 {
		t.Fatalf("lint exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"✓ echo-message 1.0.0", "✓ get-sum 1.0.0", "✓ trigger-long-running-operation 1.0.0",
		"✓ list-everything-resources 1.0.0  [query, medium, everything:read]", "✓ show-everything-resource 1.0.0  [query, medium, everything:read]",
		"✓ list-everything-prompts 1.0.0  [query, medium, everything:prompt]", "✓ get-everything-prompt 1.0.0  [query, medium, everything:prompt]",
		"verb gzip (added by the upstreams file)", ", 0 violations"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lint output lacks %q:\n%s", want, out.String())
		}
	}
}
