package knowledgesync

import (
	"context"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

// Registration is the sync service's registration, served by impl (nil for a
// contract-only registry, as tests of the transports build): its gRPC
// description, hence its tools over gRPC, MCP and the generic REST route,
// and its typed REST routes.
func Registration(impl syncv1.SyncServiceServer) registry.Service {
	return registry.Service{Desc: &syncv1.SyncService_ServiceDesc, Impl: impl,
		REST: func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
			return syncv1.RegisterSyncServiceHandlerClient(ctx, mux, syncv1.NewSyncServiceClient(conn))
		}}
}
