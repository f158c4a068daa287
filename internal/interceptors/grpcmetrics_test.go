package interceptors_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

// TestStandardGRPCServerMetrics: go-grpc-middleware's Prometheus provider
// counts every call of the gRPC listener by the final gRPC code the
// boundary mapped (a denial is NotFound, not the Unknown an unmapped tool
// error would give), health checks included, as the standard
// grpc_server_* series dashboards read; calls of the in-process channel
// (REST and MCP) are not gRPC server calls and are not counted there.
func TestStandardGRPCServerMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	var cfg interceptors.Config
	h := newHarness(t, func(c *interceptors.Config) { c.Metrics = interceptors.NewMetrics(reg); cfg = *c })
	chain, err := interceptors.Chain(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.UnaryInterceptor(chain))
	memoryv1.RegisterMemoryServiceServer(g, h.mem)
	healthpb.RegisterHealthServer(g, health.NewServer())
	lis := bufconn.Listen(1 << 20)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient("passthrough:///bufconn", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })

	client := memoryv1.NewMemoryServiceClient(conn)
	if _, err := client.SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SearchMemories(as("none"), &memoryv1.SearchMemoriesRequest{Query: "x"}); err == nil {
		t.Fatal("a principal without memory:read searched")
	}
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	// The same calls in process (as REST and MCP make them): not counted.
	if _, err := memoryv1.NewMemoryServiceClient(h.ch).SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := memoryv1.NewMemoryServiceClient(h.ch).SearchMemories(as("none"), &memoryv1.SearchMemoriesRequest{Query: "x"}); err == nil {
		t.Fatal("a principal without memory:read searched in process")
	}
	want := `
# HELP grpc_server_handled_total Total number of RPCs completed on the server, regardless of success or failure.
# TYPE grpc_server_handled_total counter
grpc_server_handled_total{grpc_code="NotFound",grpc_method="SearchMemories",grpc_service="toolsvc.memory.v1.MemoryService",grpc_type="unary"} 1
grpc_server_handled_total{grpc_code="OK",grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 1
grpc_server_handled_total{grpc_code="OK",grpc_method="SearchMemories",grpc_service="toolsvc.memory.v1.MemoryService",grpc_type="unary"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "grpc_server_handled_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "grpc_server_handling_seconds"); n == 0 {
		t.Fatal("no grpc_server_handling_seconds histogram")
	}
}
