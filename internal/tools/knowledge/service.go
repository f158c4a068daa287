package knowledge

import (
	"context"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

// Registration is the knowledge service's registration, served by impl (nil for a
// contract-only registry, as tests of the transports build): its gRPC
// description, hence its tools over gRPC, MCP and the generic REST route,
// its typed REST routes and its items as resources at knowledge://{id}.
func Registration(impl knowledgev1.KnowledgeServiceServer) registry.Service {
	return registry.Service{Desc: &knowledgev1.KnowledgeService_ServiceDesc, Impl: impl,
		REST: func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
			return knowledgev1.RegisterKnowledgeServiceHandlerClient(ctx, mux, knowledgev1.NewKnowledgeServiceClient(conn))
		},
		Resources: Resources{}}
}
