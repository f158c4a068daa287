package audit

import (
	"context"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

// Registration is the audit service's registration, served by impl (nil for a
// contract-only registry, as tests of the transports build): its gRPC
// description, hence its tools over gRPC, MCP and the generic REST route,
// and its typed REST routes.
func Registration(impl auditv1.AuditServiceServer) registry.Service {
	return registry.Service{Desc: &auditv1.AuditService_ServiceDesc, Impl: impl,
		REST: func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
			return auditv1.RegisterAuditServiceHandlerClient(ctx, mux, auditv1.NewAuditServiceClient(conn))
		}}
}
