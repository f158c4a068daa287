package baselines

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// Kinds of baseline server.
const (
	KindGRPC               = "grpc-go"
	KindGatewayInProcess   = "gateway-inproc"
	KindGatewayLoopback    = "gateway-loopback"
	KindGoSDKStateless     = "go-sdk-stateless"
	KindGoSDKStateful      = "go-sdk-stateful"
	KindMark3Stateless     = "mark3labs-stateless"
	KindMark3Stateful      = "mark3labs-stateful"
	MCPPath                = "/mcp"
	shutdownGrace          = 2 * time.Second
	bufconnSize            = 1 << 20
	readHeaderTimeout      = 5 * time.Second
	maxBaselineHeaderBytes = 64 << 10
)

// Kinds lists every baseline kind.
var Kinds = []string{KindGRPC, KindGatewayInProcess, KindGatewayLoopback, KindGoSDKStateless, KindGoSDKStateful, KindMark3Stateless, KindMark3Stateful}

// ErrUnknownKind is returned by Start for a kind not in Kinds.
var ErrUnknownKind = errors.New("baselines: unknown kind")

// Server is a running baseline on a loopback port.
type Server struct {
	// Kind is what runs.
	Kind string
	// Addr is host:port of the listener: gRPC for KindGRPC, HTTP otherwise
	// (the MCP endpoint is MCPPath, the gateway route GatewayPath).
	Addr    string
	closers []func()
}

// Close stops the server and everything it started.
func (s *Server) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// Start runs the baseline kind on a free loopback port until Close.
func Start(ctx context.Context, kind string) (_ *Server, err error) {
	if !slices.Contains(Kinds, kind) {
		return nil, fmt.Errorf("%w %q", ErrUnknownKind, kind)
	}
	s := &Server{Kind: kind}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.Addr = lis.Addr().String()
	if kind == KindGRPC {
		g := NewGRPCServer()
		go func() { _ = g.Serve(lis) }()
		s.closers = append(s.closers, g.Stop)
		return s, nil
	}
	var h http.Handler
	switch kind {
	case KindGatewayInProcess, KindGatewayLoopback:
		conn, err := s.backend(ctx, kind == KindGatewayInProcess)
		if err != nil {
			_ = lis.Close()
			return nil, err
		}
		if h, err = NewGateway(conn); err != nil {
			_ = lis.Close()
			return nil, err
		}
	case KindGoSDKStateless, KindGoSDKStateful:
		h = mcpMux(NewGoSDK(kind == KindGoSDKStateless))
	case KindMark3Stateless, KindMark3Stateful:
		h = mcpMux(NewMark3(kind == KindMark3Stateless))
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, MaxHeaderBytes: maxBaselineHeaderBytes}
	go func() { _ = hs.Serve(lis) }()
	s.closers = append(s.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			_ = hs.Close()
		}
	})
	return s, nil
}

func mcpMux(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(MCPPath, h)
	return mux
}

// backend starts the bare gRPC server the gateway calls: over bufconn when
// inProcess, else over a loopback TCP listener, and dials it.
func (s *Server) backend(ctx context.Context, inProcess bool) (*grpc.ClientConn, error) {
	g := NewGRPCServer()
	s.closers = append(s.closers, g.Stop)
	var target string
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if inProcess {
		bl := bufconn.Listen(bufconnSize)
		go func() { _ = g.Serve(bl) }()
		target = "passthrough:///bufconn"
		opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return bl.DialContext(ctx) }))
	} else {
		var lc net.ListenConfig
		lis, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		go func() { _ = g.Serve(lis) }()
		target = lis.Addr().String()
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { _ = conn.Close() })
	return conn, nil
}
