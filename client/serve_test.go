package client_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// serve is a running `toolsvc serve`, the built binary, on loopback ports.
type serve struct {
	GRPCAddr string
	HTTP     string
	cmd      *exec.Cmd
	logs     *testenv.Buffer
	done     chan struct{}
}

// serveOptions say how to start a serve.
type serveOptions struct {
	// Args are flags after serve's own (--grpc-addr, --http-addr, ...).
	Args []string
	// Env adds variables to the process's environment.
	Env []string
	// TLS makes a certificate for localhost signed by CA and serves TLS.
	CA *authtest.CA
	// ProbeCert is the client certificate the readiness probe presents to
	// a server that requires one (--tls-client-ca).
	ProbeCert *tls.Certificate
	// GRPCPort and HTTPPort, when set, are the ports (to start a replica
	// again on the same ones); else free ones are picked.
	GRPCPort, HTTPPort int
}

// startServe runs the toolsvc binary (built once per test process) and
// waits until /readyz answers 200; the process is killed at cleanup.
func startServe(t testing.TB, o serveOptions) *serve {
	t.Helper()
	bin := testenv.Binary(t, testenv.RepoRoot(t), "./cmd/toolsvc")
	grpcAddr := fmt.Sprintf("127.0.0.1:%d", cmpOr(o.GRPCPort, freePort(t)))
	httpAddr := fmt.Sprintf("127.0.0.1:%d", cmpOr(o.HTTPPort, freePort(t)))
	args := []string{"serve", "--grpc-addr", grpcAddr, "--http-addr", httpAddr, "--log-level", "warn",
		"--knowledge-dir", filepath.Join(testenv.RepoRoot(t), "examples", "knowledge")}
	scheme := "http"
	probe := &http.Client{Timeout: time.Second}
	if o.CA != nil {
		dir := t.TempDir()
		cert := o.CA.Localhost(t)
		certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		writeFile(t, certFile, cert.CertPEM)
		writeFile(t, keyFile, cert.KeyPEM)
		args = append(args, "--tls-cert", certFile, "--tls-key", keyFile)
		scheme = "https"
		tc := &tls.Config{RootCAs: o.CA.Pool(), MinVersion: tls.VersionTLS12}
		if o.ProbeCert != nil {
			tc.Certificates = []tls.Certificate{*o.ProbeCert}
		}
		probe.Transport = &http.Transport{TLSClientConfig: tc}
		defer probe.CloseIdleConnections()
	}
	cmd := exec.Command(bin, append(args, o.Args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(append(os.Environ(), "TOOLSVC_CONFIG="), o.Env...)
	s := &serve{GRPCAddr: grpcAddr, HTTP: scheme + "://" + httpAddr, cmd: cmd, logs: &testenv.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(s.kill)
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-s.done:
			t.Fatalf("toolsvc serve exited during start-up:\n%s", s.logs.String())
		default:
		}
		if resp, err := probe.Get(s.HTTP + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolsvc serve not ready after 90s:\n%s", s.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the exit.
func (s *serve) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// startTickets runs the example upstream gRPC service (its own process)
// and returns its address once it listens.
func startTickets(t testing.TB, token string) string {
	t.Helper()
	bin := testenv.Binary(t, testenv.RepoRoot(t), "./examples/upstreams/tickets/cmd/tickets")
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "-addr", addr)
	cmd.Env = append(os.Environ(), "TICKETS_TOKEN="+token)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return addr
		}
		if i == 200 {
			t.Fatalf("the tickets upstream never listened: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func cmpOr(v, def int) int {
	if v != 0 {
		return v
	}
	return def
}

// killingProxy forwards TCP connections from its own loopback address to
// a backend. Armed, it watches the backend's HTTP/2 frames and, at the
// first HEADERS frame of a stream (the start of a call's answer), SIGKILLs
// the backend and drops the connection before the answer reaches the
// client: the replica died after the write, its answer lost. Connections
// made afterwards go to the next backend.
type killingProxy struct {
	lis net.Listener

	mu       sync.Mutex
	backends []string
	armed    func() // kills the current backend; nil when not armed
	wg       sync.WaitGroup
	conns    []net.Conn
	killed   chan struct{}
}

func newKillingProxy(t testing.TB, backends ...string) *killingProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &killingProxy{lis: lis, backends: backends, killed: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *killingProxy) Addr() string { return p.lis.Addr().String() }

// arm makes the next answer's HEADERS frame call kill and fail over.
func (p *killingProxy) arm(kill func()) {
	p.mu.Lock()
	p.armed = kill
	p.mu.Unlock()
}

func (p *killingProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		backend := p.backends[0]
		p.mu.Unlock()
		b, err := net.DialTimeout("tcp", backend, 2*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, b)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); _, _ = io.Copy(b, c); _ = b.Close() }()
		go func() { defer p.wg.Done(); p.relay(c, b); _ = c.Close() }()
	}
}

// relay copies the backend's HTTP/2 frames to the client, one whole frame
// at a time, until it is armed and a stream's HEADERS frame arrives.
func (p *killingProxy) relay(client, backend net.Conn) {
	var hdr [9]byte
	for {
		if _, err := io.ReadFull(backend, hdr[:]); err != nil {
			return
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		payload := make([]byte, n)
		if _, err := io.ReadFull(backend, payload); err != nil {
			return
		}
		const framesHeaders = 0x1
		stream := (uint32(hdr[5])<<24 | uint32(hdr[6])<<16 | uint32(hdr[7])<<8 | uint32(hdr[8])) & 0x7fffffff
		if hdr[3] == framesHeaders && stream != 0 {
			p.mu.Lock()
			kill := p.armed
			p.armed = nil
			if kill != nil {
				p.backends = p.backends[1:]
			}
			p.mu.Unlock()
			if kill != nil {
				kill()
				_ = backend.Close()
				_ = client.Close()
				close(p.killed)
				return
			}
		}
		if _, err := client.Write(append(hdr[:], payload...)); err != nil {
			return
		}
	}
}

func (p *killingProxy) close() {
	_ = p.lis.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// waitKilled waits until the proxy has killed its backend.
func (p *killingProxy) waitKilled(ctx context.Context) error {
	select {
	case <-p.killed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
