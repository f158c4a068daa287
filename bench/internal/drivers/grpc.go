package drivers

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// GRPC calls one unary method with the requests in rotation.
type GRPC struct {
	conn     grpc.ClientConnInterface
	method   string
	requests *Rotation[proto.Message]
	response protoreflect.MessageType
	keys     *Rotation[string]
}

// NewGRPC calls method (a full method name, "/pkg.Service/Method") on conn,
// decoding into response's type. keys, when not empty, are API keys sent
// as "authorization: Bearer" in rotation.
func NewGRPC(conn grpc.ClientConnInterface, method string, requests []proto.Message, response protoreflect.MessageType, keys []string) *GRPC {
	return &GRPC{conn: conn, method: method, requests: NewRotation(requests), response: response, keys: NewRotation(keys)}
}

// Call makes one call and returns "" or the gRPC status code's name.
func (g *GRPC) Call(ctx context.Context, _ int) string {
	if k := g.keys.Next(); k != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+k)
	}
	resp := g.response.New().Interface()
	if err := g.conn.Invoke(ctx, g.method, g.requests.Next(), resp); err != nil {
		return status.Code(err).String()
	}
	return ""
}
