package e2e

import (
	"context"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// BenchmarkUpstreamCallIdentity is a forwarded call (get-ticket of the
// example gRPC upstream, through the whole chain over bufconn, upstream in
// the same process) with toolsvc's signed assertion and without it (no
// HTTP listener, so no public URL and no signer), for docs/BENCHMARKS.md
// "Upstream identity". Besides wall time it reports the process's CPU per
// call (getrusage), steadier than wall time on a shared machine. Run the
// two sides in turns: -count=5.
func BenchmarkUpstreamCallIdentity(b *testing.B) {
	for _, side := range []struct {
		name     string
		identity bool
	}{{"assertion", true}, {"none", false}} {
		b.Run(side.name, func(b *testing.B) {
			up := startTickets(b, ticketsOpts{})
			c := testserver.WriteCredentials(b)
			file := upstreamsFile(b, up.addr, "", "")
			s := testserver.New(b, testserver.Options{Configure: func(cfg *server.Config) {
				cfg.AuthFile, cfg.UpstreamsFile = c.AuthFile, file
				cfg.RateLimitCeiling = 0
				cfg.LogLevel = "warn"
				if !side.identity {
					cfg.DisableHTTP, cfg.HTTPAddr = true, ""
				}
			}})
			ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+c.Full))
			tools := s.Tools()
			created, err := tools.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "create-ticket", Arguments: mustStruct(b, map[string]any{"title": "Bench ticket", "priority": "low"})})
			if err != nil {
				b.Fatal(err)
			}
			id := created.GetData().GetFields()["ticket"].GetStructValue().GetFields()["id"].GetStringValue()
			if got := len(up.impl.LastMetadata().Get("x-toolsvc-identity")); (got == 1) != side.identity {
				b.Fatalf("%s: the upstream got %d assertions", side.name, got)
			}
			args := mustStruct(b, map[string]any{"ticketId": id})
			cpu0 := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				if _, err := tools.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "get-ticket", Arguments: args}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

func mustStruct(tb testing.TB, m map[string]any) *structpb.Struct {
	tb.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// cpuTime is the CPU the process used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
