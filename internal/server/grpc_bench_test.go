package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/base/logline"
	"github.com/toolsvc/toolsvc/internal/base/logsink"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/backends"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
	"github.com/toolsvc/toolsvc/internal/tools/knowledgesync"
)

// benchTenant is the tenant of the benchmark's API keys and sync run.
const benchTenant = "bench"

// BenchmarkGRPCSyncStatus is the cost of the interceptor chain over gRPC:
// get-sync-status (a real store read) over bufconn through the full chain
// of `toolsvc serve` (API keys, policy, rate limits, protovalidate, audit
// into the store, metrics, JSON logs at info), beside the same tool on the
// same kind of store served by a bare grpc-go server with no interceptors.
// The difference of the two is what the chain costs per call. Run:
//
//	go test -run '^$' -bench BenchmarkGRPCSyncStatus -benchmem ./internal/server/
func BenchmarkGRPCSyncStatus(b *testing.B) {
	keys, authFile := writeKeys(b, 256)
	servers := []struct {
		name  string
		start func(b *testing.B) syncv1.SyncServiceClient
	}{
		{name: "chain", start: func(b *testing.B) syncv1.SyncServiceClient {
			s := testserver.New(b, testserver.Options{
				Configure: func(c *server.Config) { c.AuthFile = authFile },
				Logger:    slog.New(logline.NewJSONHandler(logFile(b), &slog.HandlerOptions{Level: slog.LevelInfo})),
			})
			seedSyncRun(b, s.Store())
			return syncv1.NewSyncServiceClient(s.Conn)
		}},
		{name: "bare", start: func(b *testing.B) syncv1.SyncServiceClient {
			st, err := backends.Open(b.Context(), filepath.Join(b.TempDir(), "bare.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			seedSyncRun(b, st)
			g := grpc.NewServer()
			// The knowledge directory the chain's server serves, loaded for
			// the keys' tenant as serve loads it: the same work.
			dir, err := knowledge.OpenDir(testserver.KnowledgeDir(b), kb.LibraryOptions{Tenants: []string{benchTenant}})
			if err != nil {
				b.Fatal(err)
			}
			syncv1.RegisterSyncServiceServer(g, bareSync{tool: knowledgesync.New(dir, st)})
			return syncv1.NewSyncServiceClient(serveBufconn(b, g))
		}},
	}
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) { benchCalls(b, srv.start(b), keys, 1) })
		// 64 calls in flight, as the load run's highest concurrency.
		b.Run(srv.name+"-c64", func(b *testing.B) { benchCalls(b, srv.start(b), keys, 64) })
	}
}

// logFile is where the chain's server writes its JSON lines, as `toolsvc
// serve` writes them: to a file, through a logsink.Writer.
func logFile(b *testing.B) io.Writer {
	f, err := os.Create(filepath.Join(b.TempDir(), "toolsvc.log"))
	if err != nil {
		b.Fatal(err)
	}
	w := logsink.New(f)
	b.Cleanup(func() {
		if err := w.Close(); err != nil {
			b.Error(err)
		}
		_ = f.Close()
	})
	return w
}

// bareSync serves the product's get-sync-status as the caller of
// benchTenant, the one thing the chain would otherwise have established.
type bareSync struct {
	syncv1.UnimplementedSyncServiceServer
	tool *knowledgesync.Service
}

func (s bareSync) GetSyncStatus(ctx context.Context, req *syncv1.GetSyncStatusRequest) (*syncv1.GetSyncStatusResponse, error) {
	return s.tool.GetSyncStatus(knowledgesync.WithTenant(ctx, benchTenant), req)
}

// benchCalls calls get-sync-status with inFlight calls at a time, rotating
// over keys, and reports the process CPU per call.
func benchCalls(b *testing.B, client syncv1.SyncServiceClient, keys []string, inFlight int) {
	b.Helper()
	req := &syncv1.GetSyncStatusRequest{}
	ctxs := make([]context.Context, len(keys))
	for i, k := range keys {
		ctxs[i] = metadata.AppendToOutgoingContext(b.Context(), "authorization", "Bearer "+k)
	}
	if resp, err := client.GetSyncStatus(ctxs[0], req); err != nil || !resp.GetData().GetHealthy() {
		b.Fatalf("warm-up call: %v %v", resp, err)
	}
	b.ReportAllocs()
	var calls atomic.Int64
	cpu0 := testenv.ProcessCPU()
	b.ResetTimer()
	if inFlight == 1 {
		for b.Loop() {
			if _, err := client.GetSyncStatus(ctxs[calls.Add(1)%int64(len(ctxs))], req); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.SetParallelism(max(1, inFlight/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := client.GetSyncStatus(ctxs[calls.Add(1)%int64(len(ctxs))], req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.StopTimer()
	// Client and server share the process: CPU per call counts both, as
	// the side-by-side load run on one machine does.
	b.ReportMetric(float64((testenv.ProcessCPU()-cpu0).Microseconds())/float64(calls.Load()), "cpu-µs/op")
}

func serveBufconn(tb testing.TB, g *grpc.Server) *grpc.ClientConn {
	tb.Helper()
	lis := bufconn.Listen(1 << 20)
	go func() { _ = g.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close(); g.Stop() })
	return conn
}

// seedSyncRun records one recent clean sync run, so get-sync-status reads
// a run and reports healthy.
func seedSyncRun(tb testing.TB, st store.Store) {
	tb.Helper()
	err := st.RecordSyncRun(tb.Context(), &store.SyncRun{Tenant: benchTenant, StartedAt: time.Now().Add(-time.Hour),
		DurationMs: 1200, Added: 12, Updated: 3, Unchanged: 40})
	if err != nil {
		tb.Fatal(err)
	}
}

// writeKeys writes an auth file of n API keys of benchTenant, each its own
// principal with every permission, so per-principal rate limits admit the
// benchmark while the limiter still runs on every call.
func writeKeys(tb testing.TB, n int) ([]string, string) {
	tb.Helper()
	var b strings.Builder
	b.WriteString("api_keys:\n")
	keys := make([]string, n)
	for i := range keys {
		var r [16]byte
		_, _ = rand.Read(r[:])
		keys[i] = "bench_" + hex.EncodeToString(r[:])
		fmt.Fprintf(&b, "  - key_sha256: %s\n    subject: bench-%04d\n    tenant: %s\n    permissions: [\"*\"]\n    identifiers: {user_id: u0, project_id: p0}\n",
			auth.HashKey(keys[i]), i, benchTenant)
	}
	path := filepath.Join(tb.TempDir(), "auth.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return keys, path
}
