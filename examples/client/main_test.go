package main

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// TestMain removes the binaries the test built.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBinaries()
	os.Exit(code)
}

// TestExampleAgainstServe builds this example and the toolsvc binary, runs
// `toolsvc serve` in development mode, and runs the example against it, as
// docs/CLIENT.md says: it must exit 0 having made each of its calls.
func TestExampleAgainstServe(t *testing.T) {
	root := testenv.RepoRoot(t)
	server := testenv.Binary(t, root, "./cmd/toolsvc")
	example := testenv.Binary(t, root, "./examples/client")
	grpcAddr, httpAddr := freeAddr(t), freeAddr(t)
	serve := exec.Command(server, "serve", "--grpc-addr", grpcAddr, "--http-addr", httpAddr, "--log-level", "warn",
		"--db", filepath.Join(t.TempDir(), "example.db"), "--knowledge-dir", filepath.Join(root, "examples", "knowledge"))
	serve.Env = append(os.Environ(), "TOOLSVC_CONFIG=")
	var logs bytes.Buffer
	serve.Stdout, serve.Stderr = &logs, &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = serve.Process.Signal(syscall.SIGKILL); _ = serve.Wait() }()
	waitReady(t, "http://"+httpAddr+"/readyz")

	cmd := exec.Command(example, "-addr", grpcAddr, "-insecure")
	cmd.Env = append(os.Environ(), "TOOLSVC_TOKEN=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s\nserver:\n%s", err, out, logs.String())
	}
	t.Logf("the example's output:\n%s", out)
	for _, want := range []string{
		`tools: \d+ visible`,
		`add-memory: mem_\S+ \(idempotency key \S+\)`,
		`search-memories: [1-9]\d* found, confidence \d\.\d\d`,
		`show-knowledge: NOT_FOUND, retryable false, next: \S+`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("the example's output lacks %q:\n%s", want, out)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitReady(t *testing.T, url string) {
	t.Helper()
	probe := &http.Client{Timeout: time.Second}
	for i := 0; ; i++ {
		if resp, err := probe.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if i == 1800 {
			t.Fatalf("%s never answered 200", url)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
