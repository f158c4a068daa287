package profile

import (
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/bench/internal/toolsvc"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// BenchmarkChain calls get-sync-status through the full chain over the
// in-process channel (what REST and MCP use; gRPC adds HTTP/2 framing),
// rotating over API keys as the load tool does, in parallel.
func BenchmarkChain(b *testing.B) {
	keys, err := toolsvc.WriteKeys(b.TempDir(), "bench", 2048)
	if err != nil {
		b.Fatal(err)
	}
	s := testserver.New(b, testserver.Options{Configure: func(c *server.Config) { c.AuthFile = keys.File }})
	client := syncv1.NewSyncServiceClient(s.Channel())
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := keys.Values[next.Add(1)%uint64(len(keys.Values))]
			ctx := metadata.AppendToOutgoingContext(b.Context(), "authorization", "Bearer "+k)
			if _, err := client.GetSyncStatus(ctx, &syncv1.GetSyncStatusRequest{}); err != nil {
				b.Error(fmt.Errorf("call: %w", err))
				return
			}
		}
	})
}
