package interceptors_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

// TestStandardGRPCServerMetrics: go-grpc-middleware's Prometheus provider
// counts every call by the final gRPC code the boundary mapped (a denial is
// NotFound, not the Unknown an unmapped tool error would give), health
// checks included, as the standard grpc_server_* series dashboards read.
func TestStandardGRPCServerMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, func(c *interceptors.Config) { c.Metrics = interceptors.NewMetrics(reg) })
	healthpb.RegisterHealthServer(h.ch, health.NewServer())
	client := memoryv1.NewMemoryServiceClient(h.ch)
	if _, err := client.SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SearchMemories(as("none"), &memoryv1.SearchMemoriesRequest{Query: "x"}); err == nil {
		t.Fatal("a principal without memory:read searched")
	}
	if _, err := healthpb.NewHealthClient(h.ch).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
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
