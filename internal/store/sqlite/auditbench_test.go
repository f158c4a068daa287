package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

// BenchmarkAppendAudits measures the audit writer's store call as the
// chain makes it under load: batches of 64 events from 512 subjects of 4
// tenants over 8 tools, one transaction each. An op is one event. The
// "and-index" case also runs the indexer (migration 0014) every 8,192
// events, so that it counts the whole cost of an event, built indexes
// included; "append" leaves the index to the background indexer, which
// it stops, so that it counts what the writer pays.
func BenchmarkAppendAudits(b *testing.B) {
	for _, index := range []bool{false, true} {
		name := "append"
		if index {
			name = "and-index"
		}
		b.Run(name, func(b *testing.B) {
			s := openAt(b, filepath.Join(b.TempDir(), "audit.db"))
			s.StopAuditIndexer()
			batch := make([]*store.AuditEvent, 64)
			now := time.Now()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				batch[i%64] = &store.AuditEvent{At: now.Add(time.Duration(i) * time.Microsecond), Tenant: fmt.Sprint("tenant-", i%4),
					Tool: fmt.Sprint("tool-", i%8), ToolVersion: "1.0.0", Subject: fmt.Sprint("subject-", (i*7919)%512),
					TraceID: fmt.Sprintf("%032x", i), CorrelationID: fmt.Sprintf("%016x", i), Transport: "grpc",
					Decision: store.DecisionAllow, Code: "OK", LatencyMs: 0.25}
				i++
				if i%64 == 0 {
					if err := s.AppendAudits(b.Context(), batch); err != nil {
						b.Fatal(err)
					}
				}
				if index && i%8192 == 0 {
					if _, err := s.IndexAudit(b.Context()); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
