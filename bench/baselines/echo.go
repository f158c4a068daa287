package baselines

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// EchoMethod is the full gRPC method name of the echo baseline.
const EchoMethod = "/bench.v1.EchoService/Echo"

// EchoMessage is the small message every baseline echoes.
const EchoMessage = "hello from toolsvc-bench"

// echoServiceDesc is what protoc-gen-go-grpc would generate for
//
//	service EchoService { rpc Echo(google.protobuf.StringValue) returns (google.protobuf.StringValue); }
//
// written by hand so the bench module needs no code generation.
var echoServiceDesc = grpc.ServiceDesc{
	ServiceName: "bench.v1.EchoService",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Echo", Handler: echoHandler}},
	Metadata:    "bench/v1/echo.proto",
}

//nolint:revive // grpc.MethodHandler's parameter order
func echoHandler(_ any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.StringValue)
	if err := dec(in); err != nil {
		return nil, err
	}
	echo := func(_ context.Context, req any) (any, error) { return req, nil }
	if interceptor == nil {
		return echo(ctx, in)
	}
	return interceptor(ctx, in, &grpc.UnaryServerInfo{FullMethod: EchoMethod}, echo)
}

// RegisterEcho registers the echo service on s.
func RegisterEcho(s grpc.ServiceRegistrar) { s.RegisterService(&echoServiceDesc, struct{}{}) }

// NewGRPCServer returns a bare grpc-go server with the echo service and no
// interceptors.
func NewGRPCServer() *grpc.Server {
	s := grpc.NewServer()
	RegisterEcho(s)
	return s
}
