// Package intree is the one table of the services compiled into toolsvc.
// Each entry brings the service's gRPC description (and so its tools, over
// gRPC, MCP and the generic REST route) and its typed REST routes; adding a
// service is one function here and one line where the server builds its
// implementations (server.Builtin). Upstream tools need no entry: they are
// served by the generic /v1/tools/{name}:call route.
package intree

import (
	"context"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/registry"
)

// Memory is the memory service served by impl (nil for a contract-only
// registry, as tests of the transports build).
func Memory(impl memoryv1.MemoryServiceServer) registry.Service {
	return registry.Service{Desc: &memoryv1.MemoryService_ServiceDesc, Impl: impl,
		REST: func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
			return memoryv1.RegisterMemoryServiceHandlerClient(ctx, mux, memoryv1.NewMemoryServiceClient(conn))
		}}
}

// Knowledge is the knowledge service served by impl.
func Knowledge(impl knowledgev1.KnowledgeServiceServer) registry.Service {
	return registry.Service{Desc: &knowledgev1.KnowledgeService_ServiceDesc, Impl: impl,
		REST: func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
			return knowledgev1.RegisterKnowledgeServiceHandlerClient(ctx, mux, knowledgev1.NewKnowledgeServiceClient(conn))
		}}
}

// Sync is the sync service served by impl.
func Sync(impl syncv1.SyncServiceServer) registry.Service {
	return registry.Service{Desc: &syncv1.SyncService_ServiceDesc, Impl: impl,
		REST: func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
			return syncv1.RegisterSyncServiceHandlerClient(ctx, mux, syncv1.NewSyncServiceClient(conn))
		}}
}

// Audit is the audit service served by impl.
func Audit(impl auditv1.AuditServiceServer) registry.Service {
	return registry.Service{Desc: &auditv1.AuditService_ServiceDesc, Impl: impl,
		REST: func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
			return auditv1.RegisterAuditServiceHandlerClient(ctx, mux, auditv1.NewAuditServiceClient(conn))
		}}
}

// Contracts is every in-tree service without implementations: the
// contracts alone, for a registry that describes tools it does not serve.
func Contracts() []registry.Service {
	return []registry.Service{Memory(nil), Knowledge(nil), Sync(nil), Audit(nil)}
}
