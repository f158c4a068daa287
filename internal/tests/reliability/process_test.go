package reliability

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// toolsvcBinary builds ./cmd/toolsvc once per test run and returns its
// path; TestMain removes it.
func toolsvcBinary(tb testing.TB) string {
	tb.Helper()
	return testenv.Binary(tb, testenv.RepoRoot(tb), "./cmd/toolsvc")
}

// freePort returns a loopback port that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// freePorts returns n distinct free loopback ports: all are held open
// together before any is released, so none is handed out twice.
func freePorts(tb testing.TB, n int) []int {
	tb.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 8<<20 {
		b.buf.Reset()
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is a running `toolsvc serve` on loopback ports.
type process struct {
	cmd      *exec.Cmd
	GRPCAddr string
	HTTP     string
	// Metrics is the base URL of the --metrics-addr listener, where
	// /metrics needs no credential.
	Metrics string
	Logs    *syncBuffer
	done    chan struct{}
	exitErr error
}

// procConfig is how a process is started; ports are kept across restarts.
type procConfig struct {
	GRPCPort, HTTPPort, MetricsPort int
	Args                            []string
	// LogLevel overrides the process's "warn"; LogFile, when set, takes
	// its logs instead of the in-memory buffer (long runs at debug).
	LogLevel, LogFile string
}

// newProcConfig picks ports and the common arguments (the store db and
// extra flags).
func newProcConfig(tb testing.TB, args ...string) *procConfig {
	tb.Helper()
	return &procConfig{GRPCPort: freePort(tb), HTTPPort: freePort(tb), MetricsPort: freePort(tb), Args: append([]string{"--knowledge-dir", filepath.Join(testenv.RepoRoot(tb), "examples", "knowledge")}, args...)}
}

// start runs the binary and waits until /readyz answers 200. The process
// is killed at cleanup if still running.
func (pc *procConfig) start(tb testing.TB) *process {
	tb.Helper()
	bin := toolsvcBinary(tb)
	grpcAddr := fmt.Sprintf("127.0.0.1:%d", pc.GRPCPort)
	httpAddr := fmt.Sprintf("127.0.0.1:%d", pc.HTTPPort)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", pc.MetricsPort)
	level := cmp.Or(pc.LogLevel, "warn")
	args := append([]string{"serve", "--grpc-addr", grpcAddr, "--http-addr", httpAddr, "--metrics-addr", metricsAddr, "--log-level", level}, pc.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = tb.TempDir()
	cmd.Env = append(os.Environ(), "TOOLSVC_CONFIG=")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if pc.LogFile != "" {
		f, err := os.OpenFile(pc.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { f.Close() })
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &process{cmd: cmd, GRPCAddr: grpcAddr, HTTP: "http://" + httpAddr, Metrics: "http://" + metricsAddr, Logs: logs, done: make(chan struct{})}
	go func() { p.exitErr = cmd.Wait(); close(p.done) }()
	tb.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.done:
			tb.Fatalf("toolsvc exited during start-up: %v\n%s", p.exitErr, logs.String())
		default:
		}
		if p.ready() {
			return p
		}
		if time.Now().After(deadline) {
			tb.Fatalf("toolsvc not ready after 60s:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ready reports whether /readyz answers 200.
func (p *process) ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.HTTP+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// kill sends SIGKILL and waits for the exit.
func (p *process) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// terminate sends SIGTERM and waits up to timeout for a clean exit.
func (p *process) terminate(tb testing.TB, timeout time.Duration) error {
	tb.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.exitErr
	case <-time.After(timeout):
		p.kill()
		return fmt.Errorf("no exit within %s after SIGTERM", timeout)
	}
}

// dial connects a gRPC client to the process; closed at cleanup.
func (p *process) dial(tb testing.TB) *grpc.ClientConn {
	tb.Helper()
	conn, err := grpc.NewClient(p.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	return conn
}
