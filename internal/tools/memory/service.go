package memory

import (
	"context"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

// Registration is the memory service's registration, served by impl (nil for a
// contract-only registry, as tests of the transports build): its gRPC
// description, hence its tools over gRPC, MCP and the generic REST route,
// and its typed REST routes.
func Registration(impl memoryv1.MemoryServiceServer) registry.Service {
	return registry.Service{Desc: &memoryv1.MemoryService_ServiceDesc, Impl: impl,
		REST: func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
			return memoryv1.RegisterMemoryServiceHandlerClient(ctx, mux, memoryv1.NewMemoryServiceClient(conn))
		}}
}
