package registry_test

import (
	"testing"

	"github.com/toolsvc/toolsvc/gen/descriptor"
	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

// BenchmarkNew is the start-up cost of the registry for the built-in
// contracts: descriptor lookup, the contract checklist, and the input and
// output JSON Schema derivation of every tool, with source comments. Run:
//
//	go test -run '^$' -bench . -benchmem ./internal/contract/registry/
func BenchmarkNew(b *testing.B) {
	svcs := []registry.Service{
		{Desc: &memoryv1.MemoryService_ServiceDesc, Impl: memoryv1.UnimplementedMemoryServiceServer{}},
		{Desc: &knowledgev1.KnowledgeService_ServiceDesc, Impl: knowledgev1.UnimplementedKnowledgeServiceServer{}},
		{Desc: &syncv1.SyncService_ServiceDesc, Impl: syncv1.UnimplementedSyncServiceServer{}},
		{Desc: &auditv1.AuditService_ServiceDesc, Impl: auditv1.UnimplementedAuditServiceServer{}},
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := registry.New(svcs, registry.WithSourceInfo(descriptor.Set))
		if err != nil {
			b.Fatal(err)
		}
		if r.Len() < 10 {
			b.Fatalf("%d tools", r.Len())
		}
	}
}
