package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/client"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// benchServer runs the real server in this process (development mode,
// SQLite) with its gRPC listener on a loopback port, and returns the
// address. The benchmarks below call the same tool on it through the bare
// generated stub and through the client, so that their difference is the
// client's cost per call.
//
// Every tool has a per-principal rate limit (search-memories: 1200 calls a
// minute), so the calls rotate over benchKeys API keys, as make bench's
// load does, and the per-principal ceiling is off.
func benchServer(b *testing.B) string {
	b.Helper()
	var keys strings.Builder
	keys.WriteString("api_keys:\n")
	for i := range benchKeys {
		fmt.Fprintf(&keys, "  - key_sha256: %q\n    subject: bench-%d\n    tenant: acme\n    permissions: [\"*\"]\n"+
			"    identifiers: {org_id: acme-org, team_id: acme-team, project_id: acme-project, user_id: acme-user}\n", auth.HashKey(benchKey(i)), i)
	}
	authFile := filepath.Join(b.TempDir(), "auth.yaml")
	if err := os.WriteFile(authFile, []byte(keys.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	grpcLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	httpLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	cfg := server.Defaults()
	cfg.GRPCAddr, cfg.HTTPAddr = grpcLis.Addr().String(), httpLis.Addr().String()
	cfg.DB = filepath.Join(b.TempDir(), "bench.db")
	cfg.KnowledgeDir = testserver.KnowledgeDir(b)
	cfg.AuthFile, cfg.RateLimitCeiling = authFile, 0
	if err := cfg.Complete(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, &cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), server.Builtin)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.RunOn(ctx, grpcLis, httpLis) }()
	b.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			b.Error("server did not stop")
		}
	})
	return cfg.GRPCAddr
}

// benchRequest is a query the server answers from its result cache after
// the first call: the server's work is small and constant, so the client's
// share shows.
var benchRequest = &memoryv1.SearchMemoriesRequest{Query: "where are invoices stored"}

// BenchmarkBareStub calls search-memories with the generated stub on a
// plain grpc-go connection: the baseline.
func BenchmarkBareStub(b *testing.B) {
	addr := benchServer(b)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	stub := memoryv1.NewMemoryServiceClient(conn)
	benchCalls(b, func(ctx context.Context) error { _, err := stub.SearchMemories(ctx, benchRequest); return err })
}

// BenchmarkClientCall makes the same call through the client's typed
// service: its interceptor (contract lookup, headers, deadline, retry
// loop) and the otelgrpc stats handler with no provider set.
func BenchmarkClientCall(b *testing.B) {
	c := benchClient(b)
	benchCalls(b, func(ctx context.Context) error { _, err := c.Memory().SearchMemories(ctx, benchRequest); return err })
}

// BenchmarkClientCallWithoutTelemetry is BenchmarkClientCall without the
// otelgrpc stats handler: what the telemetry costs when no provider is set.
func BenchmarkClientCallWithoutTelemetry(b *testing.B) {
	c := benchClient(b, client.WithoutTelemetry())
	benchCalls(b, func(ctx context.Context) error { _, err := c.Memory().SearchMemories(ctx, benchRequest); return err })
}

// BenchmarkClientCallTool makes the same call by name (ToolService.CallTool
// with JSON arguments), as for an upstream tool.
func BenchmarkClientCallTool(b *testing.B) {
	c := benchClient(b)
	args := map[string]any{"query": benchRequest.GetQuery()}
	benchCalls(b, func(ctx context.Context) error { _, err := c.CallTool(ctx, "search-memories", args); return err })
}

func benchClient(b *testing.B, opts ...client.Option) *client.Client {
	b.Helper()
	c, err := client.New(benchServer(b), append([]client.Option{client.WithInsecure()}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// benchKeys is how many API keys (principals) the calls rotate over.
const benchKeys = 512

func benchKey(i int) string { return fmt.Sprintf("tsk_bench_%04d_0123456789abcdef", i) }

// benchCalls warms the connection and the server's cache for every key,
// then times call sequentially, each call with the next key (the same
// outgoing metadata for the stub and the client).
func benchCalls(b *testing.B, call func(context.Context) error) {
	b.Helper()
	ctxs := make([]context.Context, benchKeys)
	for i := range ctxs {
		ctxs[i] = metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+benchKey(i))
		if err := call(ctxs[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if err := call(ctxs[i%benchKeys]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
