package e2e

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/examples/upstreams/tickets/ticketsrv"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestExampleUpstreamsFileRunsClean serves examples/upstreams/upstreams.yaml
// as docs/ADDING-A-TOOL.md's "Try it" steps do (both example upstreams
// started; only their loopback ports differ, the test's being free ones):
// every upstream reachable, every tool served, none refused, and no warning
// or error logged (the file named an upstream the steps did not
// start, so every load logged an error).
func TestExampleUpstreamsFileRunsClean(t *testing.T) {
	tk := startTickets(t, ticketsOpts{opts: ticketsrv.Options{Token: ticketsToken}})
	dp := startDeploys(t)
	example, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "examples", "upstreams", "upstreams.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	body := strings.NewReplacer("127.0.0.1:9191", tk.addr, "http://127.0.0.1:9292/mcp", dp.url).Replace(string(example))
	if body == string(example) {
		t.Fatal("the example file no longer names the examples' default addresses")
	}
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TICKETS_TOKEN", ticketsToken)
	t.Setenv("DEPLOYS_TOKEN", deploysToken)
	logs := &testenv.Buffer{}
	s := testserver.New(t, testserver.Options{
		Configure: func(c *server.Config) { c.UpstreamsFile = file },
		Logger:    slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	ups, _ := healthz(t, s)["upstreams"].([]any)
	if len(ups) != 2 {
		t.Fatalf("upstreams %v, want tickets and deploys", ups)
	}
	for _, u := range ups {
		h := u.(map[string]any)
		served, _ := h["tools_served"].([]any)
		refused, _ := h["tools_refused"].([]any)
		if h["reachable"] != true || len(served) == 0 || len(refused) != 0 || h["error"] != nil {
			t.Errorf("upstream %v: want reachable, tools served, none refused", h)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		// Development mode's own warning is the quick start's, not the file's.
		if l != "" && !strings.Contains(l, "DEVELOPMENT MODE") {
			t.Errorf("logged: %s", l)
		}
	}
}

// TestStartupLogNamesTheStore: the start-up log says where the data lives,
// the SQLite file's absolute path (it never did).
func TestStartupLogNamesTheStore(t *testing.T) {
	logs := &testenv.Buffer{}
	s := testserver.New(t, testserver.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	want := `"msg":"store opened","backend":"sqlite","path":"` + s.Config.DB + `"`
	if !filepath.IsAbs(s.Config.DB) || !strings.Contains(logs.String(), want) {
		t.Errorf("start-up log lacks %s:\n%s", want, logs.String())
	}
}
