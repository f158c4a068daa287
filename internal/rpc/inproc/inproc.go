// Package inproc is an in-process gRPC channel: a grpc.ClientConnInterface
// that calls the registered service handlers directly, through the same
// unary interceptor chain as the network server. The MCP bridge and the REST
// gateway use it, so every transport takes one path to the handlers
// (docs/ARCHITECTURE.md) without paying for HTTP/2 framing on loopback.
//
// Messages are copied on the way in and out, as a network hop would, so a
// handler can never alias a caller's message. Outgoing metadata of the
// caller becomes the handler's incoming metadata; headers and trailers set
// by handlers reach grpc.Header and grpc.Trailer call options.
package inproc

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Channel is an in-process grpc.ClientConnInterface and grpc.ServiceRegistrar.
// Register services with RegisterService (generated Register*Server
// functions accept a Channel), then pass it to generated New*Client
// functions. Safe for concurrent use once registration is done.
type Channel struct {
	mu          sync.RWMutex
	methods     map[string]method
	interceptor grpc.UnaryServerInterceptor
}

type method struct {
	impl    any
	handler grpc.MethodHandler
}

// New returns a Channel whose calls pass through interceptor (nil for none).
func New(interceptor grpc.UnaryServerInterceptor) *Channel {
	return &Channel{methods: map[string]method{}, interceptor: interceptor}
}

// RegisterService implements grpc.ServiceRegistrar. Streaming methods are
// not served in-process.
func (c *Channel) RegisterService(desc *grpc.ServiceDesc, impl any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range desc.Methods {
		c.methods["/"+desc.ServiceName+"/"+m.MethodName] = method{impl: impl, handler: m.Handler}
	}
}

// Addr is the peer address handlers see for in-process calls.
var Addr net.Addr = inprocAddr{}

type inprocAddr struct{}

func (inprocAddr) Network() string { return "inproc" }
func (inprocAddr) String() string  { return "inproc" }

// Invoke implements grpc.ClientConnInterface.
func (c *Channel) Invoke(ctx context.Context, fullMethod string, args, reply any, opts ...grpc.CallOption) error {
	c.mu.RLock()
	m, ok := c.methods[fullMethod]
	c.mu.RUnlock()
	if !ok {
		return status.Errorf(codes.Unimplemented, "unknown method %s", fullMethod)
	}
	in, ok := args.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "inproc: request is %T, not a proto message", args)
	}
	out, ok := reply.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "inproc: reply is %T, not a proto message", reply)
	}
	md, _ := metadata.FromOutgoingContext(ctx) // a copy of its own
	sctx := metadata.NewIncomingContext(ctx, md)
	sctx = peer.NewContext(sctx, &peer.Peer{Addr: Addr, LocalAddr: Addr, AuthInfo: callerAuthInfo(ctx)})
	stream := &serverStream{method: fullMethod}
	sctx = grpc.NewContextWithServerTransportStream(sctx, stream)

	resp, err := m.handler(m.impl, sctx, func(v any) error {
		dst, ok := v.(proto.Message)
		if !ok {
			return fmt.Errorf("inproc: cannot decode into %T", v)
		}
		return merge(dst, in)
	}, c.interceptor)
	stream.deliver(opts)
	if err != nil {
		if _, isStatus := status.FromError(err); !isStatus {
			return status.Error(codes.Unknown, err.Error())
		}
		return err
	}
	// A typed nil (a handler's `return nil, nil`) is no response either:
	// grpc-go would send it as an empty message, hiding the handler's bug.
	msg, ok := resp.(proto.Message)
	if !ok || !msg.ProtoReflect().IsValid() {
		return status.Error(codes.Internal, "inproc: handler returned no response")
	}
	proto.Reset(out)
	return merge(out, msg)
}

// merge merges src into dst. Messages of one type described twice (an
// upstream's contracts read again while a call was on its way: two
// dynamic descriptors of one name) go through their wire form, which
// proto.Merge refuses to do.
func merge(dst, src proto.Message) error {
	if dst.ProtoReflect().Descriptor() == src.ProtoReflect().Descriptor() {
		proto.Merge(dst, src)
		return nil
	}
	if dst.ProtoReflect().Descriptor().FullName() != src.ProtoReflect().Descriptor().FullName() {
		return status.Errorf(codes.Internal, "inproc: %s is not %s", src.ProtoReflect().Descriptor().FullName(), dst.ProtoReflect().Descriptor().FullName())
	}
	b, err := proto.Marshal(src)
	if err != nil {
		return status.Errorf(codes.Internal, "inproc: %v", err)
	}
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(b, dst); err != nil {
		return status.Errorf(codes.Internal, "inproc: %v", err)
	}
	return nil
}

// callerAuthInfo is the AuthInfo of the peer the in-process caller put in
// ctx: the HTTP door sets the request's TLS state there, so that the chain
// sees a client certificate of REST and MCP calls as it sees one of gRPC
// calls. Context values do not cross the network: only in-process code can
// set it.
func callerAuthInfo(ctx context.Context) credentials.AuthInfo {
	if p, ok := peer.FromContext(ctx); ok {
		return p.AuthInfo
	}
	return nil
}

// NewStream implements grpc.ClientConnInterface; tools are unary only.
func (c *Channel) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "inproc: streaming is not supported")
}

// serverStream records headers and trailers that handlers set.
type serverStream struct {
	method  string
	mu      sync.Mutex
	header  metadata.MD
	trailer metadata.MD
}

func (s *serverStream) Method() string { return s.method }

func (s *serverStream) SetHeader(md metadata.MD) error {
	s.mu.Lock()
	s.header = metadata.Join(s.header, md)
	s.mu.Unlock()
	return nil
}

func (s *serverStream) SendHeader(md metadata.MD) error { return s.SetHeader(md) }

func (s *serverStream) SetTrailer(md metadata.MD) error {
	s.mu.Lock()
	s.trailer = metadata.Join(s.trailer, md)
	s.mu.Unlock()
	return nil
}

// deliver copies recorded metadata into the caller's Header/Trailer options.
func (s *serverStream) deliver(opts []grpc.CallOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = s.header.Copy()
		case grpc.TrailerCallOption:
			*o.TrailerAddr = s.trailer.Copy()
		}
	}
}

// IsInproc reports whether ctx belongs to an in-process call.
func IsInproc(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	return ok && p.Addr != nil && strings.EqualFold(p.Addr.Network(), "inproc")
}
