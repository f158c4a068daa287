package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// twoTenants is an auth file whose API keys serve two tenants.
const twoTenants = `api_keys:
  - {key: key-acme-0123456789abcdef0123456789, subject: a, tenant: acme, permissions: ["*"]}
  - {key: key-globex-0123456789abcdef01234567, subject: g, tenant: globex, permissions: ["*"]}
`

// closedPort returns a loopback address nothing listens on: bound, then
// closed, so a connection to it is refused at once.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// withViolation is server.Builtin plus a service that breaks the contract
// checklist: gRPC's health service, whose RPCs declare no tool option.
func withViolation(ctx context.Context, d server.Deps) ([]registry.Service, func(), error) {
	svcs, cleanup, err := server.Builtin(ctx, d)
	return append(svcs, registry.Service{Desc: &healthpb.Health_ServiceDesc, Impl: struct{ healthpb.HealthServer }{}}), cleanup, err
}

// TestEveryStartUpFailureSaysWhyAndLeavesNothing starts serve and mcp with
// each way a start-up can fail: each prints one line `cannot start:
// <reason>` naming the cause, exits 1, never panics, and leaves no
// goroutine behind (everything acquired before the failure is released).
func TestEveryStartUpFailureSaysWhyAndLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_DATA_HOME", "")
	knowledge := repoKnowledge(t)
	flat := write(t, dir, "flat/item.md", "---\nid: flat-item\ntitle: A flat item\nlayer: company\n---\nA body.\n")
	notADir := write(t, dir, "file", "x")
	garbage := write(t, dir, "garbage.pem", "not a PEM file")
	tests := []struct {
		name     string
		args     []string
		services server.ServicesFunc
		want     []string // substrings of the one line
		log      string   // a line of the report before it
	}{
		{name: "missing auth file", args: []string{"--auth-file", filepath.Join(dir, "nope.yaml")}, want: []string{"auth file", "nope.yaml"}},
		{name: "invalid auth file", args: []string{"--auth-file", write(t, dir, "bad-auth.yaml", "api_keys: [{")}, want: []string{"auth file", "bad-auth.yaml"}},
		{name: "bad DB path", args: []string{"--db", filepath.Join(notADir, "toolsvc.db")}, want: []string{"open store", notADir}},
		{name: "bad DB URL", args: []string{"--db", "mysql://127.0.0.1/toolsvc"}, want: []string{"unsupported DSN scheme"}},
		{name: "unreachable PostgreSQL", args: []string{"--db", "postgres://toolsvc:s3cret@" + closedPort(t) + "/toolsvc?sslmode=disable&connect_timeout=3"},
			want: []string{"open store", "postgres://REDACTED@127.0.0.1:"}},
		{name: "unreachable Redis", args: []string{"--redis", "redis://" + closedPort(t) + "/0"}, want: []string{"redis", "not reachable"}},
		{name: "missing upstreams file", args: []string{"--upstreams", filepath.Join(dir, "nope-upstreams.yaml")}, want: []string{"upstreams file", "nope-upstreams.yaml"}},
		{name: "invalid upstreams file", args: []string{"--upstreams", write(t, dir, "bad-upstreams.yaml", "upstreams: [{")}, want: []string{"upstreams"}},
		{name: "missing TLS files", args: []string{"--tls-cert", filepath.Join(dir, "nope.crt"), "--tls-key", filepath.Join(dir, "nope.key")}, want: []string{"TLS", "nope.crt"}},
		{name: "invalid TLS files", args: []string{"--tls-cert", garbage, "--tls-key", garbage}, want: []string{"TLS", "garbage.pem"}},
		{name: "TLS cert without key", args: []string{"--tls-cert", garbage}, want: []string{"--tls-cert and --tls-key go together"}},
		{name: "conflicting embeddings flags", args: []string{"--embeddings-url", "http://127.0.0.1:1/v1/embeddings", "--embeddings-model-dir", dir},
			want: []string{"--embeddings-url and --embeddings-model-dir conflict"}},
		{name: "named knowledge directory missing", args: []string{"--knowledge-dir", filepath.Join(dir, "no-knowledge")}, want: []string{"knowledge", "no-knowledge"}},
		{name: "flat knowledge beside two tenants", args: []string{"--auth-file", write(t, dir, "two.yaml", twoTenants), "--knowledge-dir", filepath.Dir(flat)},
			want: []string{"knowledge", "2 tenants (acme, globex)", "tenants/<tenant>/"}},
		{name: "in-tree contract violation", services: withViolation, want: []string{"contract violation", "grpc.health.v1.Health/Check"},
			log: `"msg":"tool contract violation"`},
		{name: "HTTP address taken", args: []string{"--http-addr", "taken"}, want: []string{"cannot listen", "HTTP"}},
	}
	for _, tt := range tests {
		for _, cmd := range []string{"serve", "mcp"} {
			if cmd == "mcp" && tt.name == "HTTP address taken" {
				continue // mcp listens on nothing
			}
			t.Run(cmd+"/"+tt.name, func(t *testing.T) {
				defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
				if tt.services != nil {
					services = tt.services
					defer func() { services = server.Builtin }()
				}
				args := append([]string{cmd, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
					"--db", filepath.Join(t.TempDir(), "t.db"), "--knowledge-dir", knowledge, "--log-format", "json"}, tt.args...)
				if len(tt.args) > 1 && tt.args[1] == "taken" {
					l, err := net.Listen("tcp", "127.0.0.1:0")
					if err != nil {
						t.Fatal(err)
					}
					defer l.Close()
					args[len(args)-1] = l.Addr().String()
				}
				var stdout, stderr bytes.Buffer
				code := run(t.Context(), args, strings.NewReader(""), &stdout, &stderr)
				if code != 1 {
					t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
				}
				line := checkOneCannotStart(t, stderr.String())
				t.Log(line)
				for _, w := range tt.want {
					if !strings.Contains(line, w) {
						t.Errorf("%q does not name %q", line, w)
					}
				}
				if strings.Contains(line, "s3cret") {
					t.Errorf("%q shows a password", line)
				}
				if tt.log != "" && !strings.Contains(stderr.String(), tt.log) {
					t.Errorf("stderr lacks the report line %s:\n%s", tt.log, stderr.String())
				}
			})
		}
	}
}

// checkOneCannotStart checks that stderr holds exactly one `cannot
// start:` line, its last, and no panic; it returns that line.
func checkOneCannotStart(t *testing.T, stderr string) string {
	t.Helper()
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
		t.Fatalf("stderr shows a panic:\n%s", stderr)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "cannot start: ") {
			n++
		}
	}
	last := lines[len(lines)-1]
	if n != 1 || !strings.HasPrefix(last, "cannot start: ") {
		t.Fatalf("want one `cannot start:` line, the last; stderr:\n%s", stderr)
	}
	return last
}

// TestTheBinaryCannotStartWithOneLine runs the real binary from a
// directory outside the repository with an upstreams file that does not
// exist (and so no knowledge directory either): one line on stderr, exit
// status 1.
func TestTheBinaryCannotStartWithOneLine(t *testing.T) {
	bin := testenv.Binary(t, "../..", "./cmd/toolsvc")
	dir := t.TempDir()
	cmd := exec.Command(bin, "serve", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--db", filepath.Join(dir, "x.db"), "--upstreams", "/nonexistent/upstreams.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1; stderr:\n%s", err, stderr.String())
	}
	line := checkOneCannotStart(t, stderr.String())
	if !strings.Contains(line, "/nonexistent/upstreams.yaml") {
		t.Fatalf("%q does not name the upstreams file", line)
	}
}

// TestInstalledBinaryStartsAnywhere runs the real binary as an installed
// one is run: from an empty directory, HOME an empty directory, nothing
// but loopback addresses given. It answers /healthz and /readyz with the
// default knowledge directory missing (a warning, no knowledge), keeps its
// database under HOME (not the working directory), and on SIGTERM turns
// /readyz to 503 for --shutdown-drain while /healthz stays 200, then exits
// 0.
func TestInstalledBinaryStartsAnywhere(t *testing.T) {
	bin := testenv.Binary(t, "../..", "./cmd/toolsvc")
	dir, home := t.TempDir(), t.TempDir()
	cmd := exec.Command(bin, "serve", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--shutdown-drain", "3s")
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_DATA_HOME=") && !strings.HasPrefix(kv, "TOOLSVC_") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var logged []string
	var base string
	for base == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("toolsvc serve ended before listening:\n%s", strings.Join(logged, "\n"))
			}
			logged = append(logged, l)
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "HTTP listening" {
				base = "http://" + rec.Addr
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("toolsvc serve did not listen:\n%s", strings.Join(logged, "\n"))
		}
	}
	go func() { // drain the rest, or the process blocks on a full pipe
		for l := range lines {
			_ = l
		}
	}()
	if !slices.ContainsFunc(logged, func(l string) bool { return strings.Contains(l, "default knowledge directory does not exist") }) {
		t.Errorf("no warning about the missing default knowledge directory:\n%s", strings.Join(logged, "\n"))
	}
	get := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	if code := get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz: %d", code)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "share", "toolsvc", "toolsvc.db")); err != nil {
		t.Errorf("the default database is not under HOME: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the working directory was written to: %v", entries)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := get("/readyz")
	for deadline := time.Now().Add(10 * time.Second); code != http.StatusServiceUnavailable && time.Now().Before(deadline); code = get("/readyz") {
		time.Sleep(10 * time.Millisecond)
	}
	if code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz after SIGTERM: %d, want 503", code)
	}
	if code := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz during the drain: %d, want 200", code)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("toolsvc serve after SIGTERM: %v, want exit 0", err)
	}
}

// TestREADMEDesktopAgentConfigRuns runs the README's desktop-agent
// configuration as an agent would, on a machine with nothing else: its
// command's arguments and environment, from an empty directory, HOME an
// empty directory (no knowledge directory, no database yet). It answers
// initialize and tools/list, and exits 0 when standard input ends.
func TestREADMEDesktopAgentConfigRuns(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	for _, block := range strings.Split(string(readme), "```json")[1:] {
		body, _, _ := strings.Cut(block, "```")
		if err := json.Unmarshal([]byte(body), &cfg); err == nil && cfg.MCPServers["toolsvc"].Command != "" {
			break
		}
	}
	server, ok := cfg.MCPServers["toolsvc"]
	if !ok || server.Command == "" || len(server.Args) == 0 || server.Args[0] != "mcp" {
		t.Fatalf("README has no desktop-agent configuration running `toolsvc mcp`: %+v", cfg)
	}
	bin := testenv.Binary(t, "../..", "./cmd/toolsvc")
	dir, home := t.TempDir(), t.TempDir()
	cmd := exec.Command(bin, server.Args...)
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_DATA_HOME=") && !strings.HasPrefix(kv, "TOOLSVC_") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home)
	for k, v := range server.Env {
		env = append(env, k+"="+v)
	}
	cmd.Env = env
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"readme","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", server.Command, server.Args, err, stderr.String())
	}
	var listed bool
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				Tools []struct{ Name string } `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(line), &msg) == nil && msg.ID == 2 && len(msg.Result.Tools) > 0 {
			listed = true
		}
	}
	if !listed {
		t.Fatalf("no tools/list answer:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}

// TestStartupGCIsRestored: start-up's raised collector target is Go's
// default again once the server is built, and a target the operator chose
// is never changed.
func TestStartupGCIsRestored(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	restore := startupGC()
	if got := debug.SetGCPercent(-1); got != startupGCPercent {
		t.Errorf("during start-up the target is %d, want %d", got, startupGCPercent)
	}
	debug.SetGCPercent(startupGCPercent)
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after start-up the target is %d, want 100", got)
	}
	for _, chosen := range []int{50, 300, -1} {
		debug.SetGCPercent(chosen)
		restore := startupGC()
		if got := debug.SetGCPercent(chosen); got != chosen {
			t.Errorf("GOGC=%d: during start-up the target is %d", chosen, got)
		}
		restore()
		if got := debug.SetGCPercent(chosen); got != chosen {
			t.Errorf("GOGC=%d: after start-up the target is %d", chosen, got)
		}
	}
}
