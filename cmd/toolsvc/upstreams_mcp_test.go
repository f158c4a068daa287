package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// deploysBinary builds the example MCP server (its own module) once.
func deploysBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the example MCP server; skipped in -short mode")
	}
	return testenv.Binary(t, filepath.Join("..", "..", "examples", "upstreams", "deploys"), "./cmd/deploys")
}

// TestLintMCPUpstream: `toolsvc lint --upstreams` checks an MCP server's
// tools against the tool contract (docs/CONTRACTS.md) and the checklist, and names the tool
// and rule of every refusal: a tool without an outputSchema, a tool with
// free-form parameters.
func TestLintMCPUpstream(t *testing.T) {
	bin := deploysBinary(t)
	write := func(args string) string {
		path := filepath.Join(t.TempDir(), "upstreams.yaml")
		body := "upstreams:\n  - name: deploys\n    mcp:\n      command: [" + bin + ", -stdio" + args + "]\n    identity: {plain_headers: true}\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"lint", "--knowledge-dir", repoKnowledge(t), "--upstreams", write("")}, nil, &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "✓ create-deployment 1.0.0") || !strings.Contains(out.String(), "✓ list-deployments 1.0.0") {
		t.Fatalf("lint exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	out.Reset()
	code = run(context.Background(), []string{"lint", "--knowledge-dir", repoKnowledge(t), "--upstreams", write(", -bad-tools")}, nil, &out, &errOut)
	if code != 1 {
		t.Fatalf("lint of an MCP server with failing tools exit %d\n%s", code, out.String())
	}
	for _, want := range []string{"tail-deployment-logs", "mcp.output_schema", "patch-deployment", "mcp.no_free_form_parameters", "upstream deploys"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lint output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestServeReloadsUpstreams: `toolsvc serve` reads its upstreams file again
// on SIGHUP, and when the file changes with --upstreams-poll; with polling
// off (negative) a changed file waits for SIGHUP.
func TestServeReloadsUpstreams(t *testing.T) {
	bin := deploysBinary(t)
	// SIGHUP must never reach the test binary's default action (exit),
	// even before serve has set up its own handler.
	hup := make(chan os.Signal, 4)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	entry := "upstreams:\n  - name: deploys\n    mcp:\n      command: [" + bin + ", -stdio]\n    identity: {plain_headers: true}\n"
	serve := func(t *testing.T, file, poll string) string {
		t.Helper()
		httpAddr, grpcAddr := freePort(t), freePort(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var out syncBuffer // serve's own lines: what a failed start says
		code := -1
		go func() {
			defer close(done)
			code = run(ctx, []string{"serve", "--http-addr", httpAddr, "--grpc-addr", grpcAddr, "--db", filepath.Join(t.TempDir(), "t.db"),
				"--knowledge-dir", repoKnowledge(t), "--upstreams", file, "--upstreams-poll", poll, "--log-level", "error"}, nil, &out, &out)
		}()
		t.Cleanup(func() { cancel(); <-done })
		base := "http://" + httpAddr
		waitFor(t, func() bool {
			select {
			case <-done:
				t.Fatalf("serve exited (%d) before it answered /healthz: %s", code, out.String())
			default:
			}
			return httpStatus(base+"/healthz") == http.StatusOK
		}, "serve never answered /healthz")
		return base
	}
	tool := func(base string) int { return httpStatus(base + "/v1/tools/create-deployment") }

	t.Run("SIGHUP", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "upstreams.yaml")
		writeFile(t, file, "upstreams: []\n")
		base := serve(t, file, "-1s")
		if got := tool(base); got != http.StatusNotFound {
			t.Fatalf("before the reload: HTTP %d", got)
		}
		writeFile(t, file, entry)
		time.Sleep(300 * time.Millisecond)
		if got := tool(base); got != http.StatusNotFound {
			t.Fatalf("polling is off, yet the changed file was read: HTTP %d", got)
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return tool(base) == http.StatusOK }, "create-deployment never appeared after SIGHUP")
		writeFile(t, file, "upstreams: []\n")
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return tool(base) == http.StatusNotFound }, "create-deployment never disappeared after SIGHUP")
	})
	t.Run("file changed", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "upstreams.yaml")
		writeFile(t, file, entry)
		base := serve(t, file, "100ms")
		if got := tool(base); got != http.StatusOK {
			t.Fatalf("at start: HTTP %d", got)
		}
		writeFile(t, file, "upstreams: []\n")
		waitFor(t, func() bool { return tool(base) == http.StatusNotFound }, "create-deployment never disappeared after the file changed")
	})
}

func freePort(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	return lis.Addr().String()
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func httpStatus(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitFor(t *testing.T, ok func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer that serve's goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
