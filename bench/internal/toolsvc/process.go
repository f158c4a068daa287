package toolsvc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Build compiles cmd/toolsvc of the repository at repo into dir and returns
// the binary's path.
func Build(ctx context.Context, repo, dir string) (string, error) {
	bin := filepath.Join(dir, "toolsvc")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/toolsvc")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("toolsvc: build: %w\n%s", err, out)
	}
	return bin, nil
}

// Keys are API keys written to an auth file: all of one tenant, each its
// own subject, with every permission.
type Keys struct {
	// File is the auth file's path.
	File string
	// Values are the keys in plain text, for the load drivers.
	Values []string
	// Tenant is the tenant of every key.
	Tenant string
}

// WriteKeys writes an auth file of n API keys (stored as SHA-256) into dir.
// Each key is its own principal, so that a load driver rotating over them
// stays within every per-principal rate limit; identifiers give the callers
// a user (u0), a project (p0) and the company layer for memory tools.
func WriteKeys(dir, tenant string, n int) (Keys, error) {
	type key struct {
		KeySHA256   string            `yaml:"key_sha256"`
		Subject     string            `yaml:"subject"`
		Tenant      string            `yaml:"tenant"`
		Permissions []string          `yaml:"permissions"`
		Identifiers map[string]string `yaml:"identifiers"`
	}
	k := Keys{File: filepath.Join(dir, "auth.yaml"), Tenant: tenant}
	var file struct {
		APIKeys []key `yaml:"api_keys"`
	}
	for i := range n {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		v := "bench_" + hex.EncodeToString(b)
		k.Values = append(k.Values, v)
		file.APIKeys = append(file.APIKeys, key{KeySHA256: hashKey(v), Subject: fmt.Sprintf("bench-%04d", i), Tenant: tenant,
			Permissions: []string{"*"}, Identifiers: map[string]string{"user_id": "u0", "project_id": "p0"}})
	}
	b, err := yaml.Marshal(file)
	if err != nil {
		return Keys{}, err
	}
	return k, os.WriteFile(k.File, b, 0o600)
}

// Process is a running `toolsvc serve`.
type Process struct {
	// GRPCAddr and HTTPAddr are the loopback listen addresses.
	GRPCAddr, HTTPAddr string
	cmd                *exec.Cmd
	done               chan error
}

// PID is the process id, for /proc readings.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Options for Start.
type Options struct {
	// Binary is the toolsvc binary.
	Binary string
	// DB is the store (SQLite path or postgres:// URL).
	DB string
	// KnowledgeDir is the knowledge directory.
	KnowledgeDir string
	// AuthFile, when set, is passed as --auth-file.
	AuthFile string
	// Extra are more flags.
	Extra []string
	// Log receives the server's stderr; nil discards it.
	Log io.Writer
}

// Start runs toolsvc serve on free loopback ports and waits until /readyz
// answers, at most 60s.
func Start(ctx context.Context, o Options) (*Process, error) {
	grpcAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	httpAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--grpc-addr", grpcAddr, "--http-addr", httpAddr, "--db", o.DB, "--knowledge-dir", o.KnowledgeDir}
	if o.AuthFile != "" {
		args = append(args, "--auth-file", o.AuthFile)
	}
	args = append(args, o.Extra...)
	// The process is stopped by Stop, not by ctx: a cancelled run must
	// still shut the server down gracefully.
	cmd := exec.Command(o.Binary, args...) //nolint:gosec // our own freshly built binary
	cmd.Stdout, cmd.Stderr = o.Log, o.Log
	if cmd.Stderr == nil {
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	}
	// No inherited TOOLSVC_* settings: the flags above are the whole
	// configuration.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TOOLSVC_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("toolsvc: start: %w", err)
	}
	p := &Process{GRPCAddr: grpcAddr, HTTPAddr: httpAddr, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	if err := p.waitReady(ctx, 60*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// ReadyPoll is how often a starting server's /readyz is asked.
const ReadyPoll = 5 * time.Millisecond

func (p *Process) waitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	// Polled often, so that the idle footprint's start-up time is late
	// by at most ReadyPoll.
	tick := time.NewTicker(ReadyPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("toolsvc: exited before ready: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("toolsvc: not ready after %s: %w", limit, ctx.Err())
		case <-tick.C:
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.HTTPAddr+"/readyz", nil)
			if resp, err := client.Do(req); err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
	}
}

// Stop sends SIGINT, waits up to 15s for a graceful exit, then kills.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		p.done <- <-p.done
	}
}

// freePort returns a loopback address whose port was just free.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// ErrNoRepo is returned by FindRepo outside a toolsvc checkout.
var ErrNoRepo = errors.New("toolsvc: not inside the toolsvc repository")

// FindRepo walks up from dir to the directory holding the product's go.mod.
func FindRepo(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/toolsvc/toolsvc\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", ErrNoRepo
		}
	}
}
