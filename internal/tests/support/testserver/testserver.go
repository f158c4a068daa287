// Package testserver runs the real toolsvc wiring for tests: the same
// server.New as `toolsvc serve`, with gRPC over bufconn and HTTP on an
// httptest server on loopback, cleaned up with t.Cleanup.
package testserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/server"
)

// Backends the tests can run against.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Options configure a test server.
type Options struct {
	// Backend is SQLite (default) or Postgres (needs TOOLSVC_TEST_POSTGRES).
	Backend string
	// Services builds the tool services; default server.Builtin.
	Services server.ServicesFunc
	// Configure adjusts the configuration before Complete.
	Configure func(*server.Config)
	// Logger receives the server's logs; default discards them.
	Logger *slog.Logger
}

// Server is a running test server.
type Server struct {
	*server.Server
	// Conn is a gRPC client connection to the server over bufconn.
	Conn *grpc.ClientConn
	// HTTP is the base URL of the HTTP listener (http://127.0.0.1:port).
	HTTP string
	// Config is the completed configuration.
	Config *server.Config
}

// Tools returns a ToolService client.
func (s *Server) Tools() toolsvcv1.ToolServiceClient { return toolsvcv1.NewToolServiceClient(s.Conn) }

// New starts a server and registers its cleanup on t.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	defaults := server.Defaults()
	cfg := &defaults
	cfg.DisableGRPC = true
	cfg.KnowledgeDir = KnowledgeDir(t)
	cfg.DB = filepath.Join(t.TempDir(), "toolsvc.db")
	// The examples publish one policy to every tenant (company-wide/).
	cfg.KnowledgeCompanyWide = true
	if opts.Backend == Postgres {
		cfg.DB = PostgresDSN(t)
	}
	if opts.Configure != nil {
		opts.Configure(cfg)
	}
	if err := cfg.Complete(); err != nil {
		t.Fatalf("testserver: config: %v", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	services := opts.Services
	if services == nil {
		services = server.Builtin
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, cfg, logger, services)
	if err != nil {
		cancel()
		t.Fatalf("testserver: %v", err)
	}
	lis := bufconn.Listen(1 << 20)
	// Run serves gRPC on bufconn and starts the background jobs, as for
	// `toolsvc serve`; HTTP is an httptest server on loopback for its URL.
	ran := make(chan error, 1)
	go func() { ran <- srv.RunOn(ctx, lis, nil) }()
	httpSrv := httptest.NewServer(srv.Handler())
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("testserver: dial: %v", err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		httpSrv.Close()
		cancel()
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("testserver: Run: %v", err)
			}
		case <-time.After(cfg.ShutdownDrain + cfg.ShutdownGrace + 5*time.Second):
			t.Errorf("testserver: Run did not return after shutdown")
		}
	})
	return &Server{Server: srv, Conn: conn, HTTP: httpSrv.URL, Config: cfg}
}

// KnowledgeDir returns the repository's examples/knowledge directory.
func KnowledgeDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		candidate := filepath.Join(dir, "examples", "knowledge")
		if st, err := os.Stat(candidate); err == nil && st.IsDir() {
			return candidate
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testserver: examples/knowledge not found above the working directory")
		}
		dir = parent
	}
}

// PostgresDSN returns a DSN of a fresh schema in the test database named by
// TOOLSVC_TEST_POSTGRES, dropped at cleanup. Without the variable the test
// is skipped with a clear message (`make test` always sets it).
func PostgresDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv("TOOLSVC_TEST_POSTGRES")
	if base == "" {
		t.Skip("TOOLSVC_TEST_POSTGRES is not set; run the tests with `make test`, which sets it")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "ts_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("testserver: connect to PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("testserver: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, base); err == nil {
			_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			_ = c.Close(ctx)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("testserver: TOOLSVC_TEST_POSTGRES: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
