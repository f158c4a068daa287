package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// BenchmarkGRPCAddMemory is the cost of a write through the full chain of
// `toolsvc serve` on SQLite at 1, 8 and 64 calls in flight: add-memory is
// answered only once its audit record is durable (group commit), so this
// is where the audit trail's price shows. Run with a fixed count, which
// keeps every key under add-memory's per-principal rate limit:
//
//	go test -run '^$' -bench BenchmarkGRPCAddMemory -benchtime 2000x ./internal/server/
func BenchmarkGRPCAddMemory(b *testing.B) {
	keys, authFile := writeKeys(b, 256)
	for _, inFlight := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("c%d", inFlight), func(b *testing.B) {
			s := testserver.New(b, testserver.Options{
				Configure: func(c *server.Config) {
					c.AuthFile = authFile
					// On a shared machine 64 writes in flight can outlast
					// add-memory's 2 s deadline; this measures cost, not that.
					c.Chain.Deadlines = interceptors.Deadlines{Fast: time.Minute, Medium: time.Minute, Slow: time.Minute}
				},
				Logger: slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
			})
			benchAddMemory(b, memoryv1.NewMemoryServiceClient(s.Conn), keys, inFlight)
		})
	}
}

func benchAddMemory(b *testing.B, client memoryv1.MemoryServiceClient, keys []string, inFlight int) {
	b.Helper()
	ctxs := make([]context.Context, len(keys))
	for i, k := range keys {
		ctxs[i] = metadata.AppendToOutgoingContext(b.Context(), "authorization", "Bearer "+k)
	}
	var calls atomic.Int64
	add := func() error {
		n := calls.Add(1)
		_, err := client.AddMemory(ctxs[n%int64(len(ctxs))], &memoryv1.AddMemoryRequest{
			Content: fmt.Sprintf("benchmark memory %d about group commit", n), Layer: "user"})
		return err
	}
	if err := add(); err != nil {
		b.Fatalf("warm-up call: %v", err)
	}
	b.ReportAllocs()
	cpu0 := testenv.ProcessCPU()
	b.ResetTimer()
	if inFlight == 1 {
		for b.Loop() {
			if err := add(); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.SetParallelism(max(1, inFlight/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := add(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64((testenv.ProcessCPU()-cpu0).Microseconds())/float64(calls.Load()), "cpu-µs/op")
}
