package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestExampleUpstreamAsItsOwnProcess follows docs/ADDING-A-TOOL.md: the
// example upstream runs as its own process, toolsvc serves it with the
// repository's examples/upstreams/upstreams.yaml (its address aside), and
// its tools are listed and called on every transport and in
// /openapi.json. Killed, the upstream's tools fail with PROVIDER_ERROR;
// restarted, they answer again without toolsvc restarting.
func TestExampleUpstreamAsItsOwnProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example upstream; skipped in -short mode")
	}
	root := testenv.RepoRoot(t)
	bin := testenv.Binary(t, root, "./examples/upstreams/tickets/cmd/tickets")
	addr := freeAddr(t)
	// Both examples take the caller from toolsvc's signed assertion, as
	// the example upstreams file expects (no plain headers).
	jwks, point := jwksFront(t)
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "-addr", addr, "-toolsvc", testIssuer, "-jwks", jwks)
		cmd.Env = append(os.Environ(), "TICKETS_TOKEN=e2e-tickets-token")
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	proc := start()

	example, err := os.ReadFile(filepath.Join(root, "examples", "upstreams", "upstreams.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The example MCP server too (docs/ADDING-A-TOOL.md, the third way).
	deploys := startDeploys(t, "-toolsvc", testIssuer, "-jwks", jwks)
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	body := strings.ReplaceAll(string(example), "127.0.0.1:9191", addr)
	body = strings.ReplaceAll(body, "http://127.0.0.1:9292/mcp", deploys.url)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TICKETS_TOKEN", "e2e-tickets-token")
	t.Setenv("DEPLOYS_TOKEN", deploysToken)
	c := testserver.WriteCredentials(t)
	for i := 0; ; i++ { // the upstream's listener may take a moment to come up
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
			break
		}
		if i == 100 {
			t.Fatalf("the example upstream never listened: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) {
		cfg.AuthFile = c.AuthFile
		cfg.UpstreamsFile = file
	}})
	point(s)

	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+c.Full)
	list, err := s.Tools().ListTools(ctx, &toolsvcv1.ListToolsRequest{NamesOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range list.GetTools() {
		names[tl.GetName()] = true
	}
	if !names["create-ticket"] || !names["get-ticket"] || !names["add-memory"] || names["purge-tickets"] ||
		!names["create-deployment"] || !names["list-deployments"] {
		t.Fatalf("ListTools = %v, want built-in and upstream tools and no purge", names)
	}
	resp, err := http.Get(s.HTTP + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(doc), `"create-ticket"`) || !strings.Contains(string(doc), `"create-deployment"`) {
		t.Fatal("/openapi.json does not list create-ticket and create-deployment under /v1/tools/{name}:call")
	}
	for _, tr := range transportsOf(s) {
		if out := call(t, tr, c.Full, "create-ticket", map[string]any{"title": "Export button fails", "priority": "high"}); out.Code != "OK" {
			t.Fatalf("%s: %s %v", tr.Name(), out.Code, out.Error)
		}
		if out := call(t, tr, c.Full, "create-deployment", map[string]any{"service": "billing", "version": "1.4.2", "environment": "staging"}); out.Code != "OK" {
			t.Fatalf("%s: %s %v", tr.Name(), out.Code, out.Error)
		}
	}

	_ = proc.Process.Signal(syscall.SIGKILL)
	_ = proc.Wait()
	for _, tr := range transportsOf(s) {
		if out := call(t, tr, c.Full, "create-ticket", map[string]any{"title": "While it is down", "priority": "low"}); out.Code != "PROVIDER_ERROR" {
			t.Fatalf("%s with the upstream killed: %s %v", tr.Name(), out.Code, out.Error)
		}
	}
	start()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := call(t, REST{S: s}, c.Full, "create-ticket", map[string]any{"title": "After the restart", "priority": "low"})
		if out.Code == "OK" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted upstream never answered: %s %v", out.Code, out.Error)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
