package baselines

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/knowledgesync"
)

// Kinds of baseline server.
const (
	KindGRPC              = "grpc-go"
	KindGRPCSyncStatus    = "grpc-go-sync-status"
	KindGatewayInProcess  = "gateway-inproc"
	KindGatewaySyncStatus = "gateway-inproc-sync-status"
	KindGatewayLoopback   = "gateway-loopback"
	KindGoSDKStateless    = "go-sdk-stateless"
	KindGoSDKStateful     = "go-sdk-stateful"
	KindMark3Stateless    = "mark3labs-stateless"
	KindMark3SyncStatus   = "mark3labs-stateful-sync-status"
	KindMark3Stateful     = "mark3labs-stateful"
	// KindMark3Modern and KindMark3SyncStatusModern are the mark3labs echo
	// and same-work servers driven in revision 2026-07-28, which mcp-go
	// serves beside the 2025 era by default (the same servers as
	// KindMark3Stateless and KindMark3SyncStatus).
	KindMark3Modern           = "mark3labs-2026"
	KindMark3SyncStatusModern = "mark3labs-sync-status-2026"
	// KindHTTPFloor is the floor of any JSON-RPC over HTTP server on this
	// machine: net/http reading the request's body and writing a fixed
	// tools/call answer (HTTPFloor), no parsing, no work.
	KindHTTPFloor          = "nethttp-floor"
	MCPPath                = "/mcp"
	shutdownGrace          = 2 * time.Second
	bufconnSize            = 1 << 20
	readHeaderTimeout      = 5 * time.Second
	maxBaselineHeaderBytes = 64 << 10
)

// Kinds lists every baseline kind.
var Kinds = []string{KindGRPC, KindGRPCSyncStatus, KindGatewayInProcess, KindGatewaySyncStatus, KindGatewayLoopback, KindGoSDKStateless, KindGoSDKStateful, KindMark3Stateless, KindMark3Stateful, KindMark3SyncStatus, KindMark3Modern, KindMark3SyncStatusModern, KindHTTPFloor}

// ErrUnknownKind is returned by Start for a kind not in Kinds.
var ErrUnknownKind = errors.New("baselines: unknown kind")

// Server is a running baseline on a loopback port.
type Server struct {
	// Kind is what runs.
	Kind string
	// Addr is host:port of the listener: gRPC for KindGRPC and
	// KindGRPCSyncStatus, HTTP otherwise (the MCP endpoint is MCPPath, the
	// echo gateway route GatewayPath, the same-work gateway's the sync
	// service's generated routes).
	Addr    string
	closers []func()
	// knowledgeDir is WithKnowledge's directory.
	knowledgeDir string
}

// Close stops the server and everything it started.
func (s *Server) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// Option configures Start.
type Option func(*Server)

// WithKnowledge gives the same-work sync-status baselines the knowledge
// directory toolsvc serves in the same run (SyncStatusTool), so that both
// report the same knowledge set and pending changes.
func WithKnowledge(dir string) Option { return func(s *Server) { s.knowledgeDir = dir } }

// Start runs the baseline kind on a free loopback port until Close.
func Start(ctx context.Context, kind string, opts ...Option) (_ *Server, err error) {
	if !slices.Contains(Kinds, kind) {
		return nil, fmt.Errorf("%w %q", ErrUnknownKind, kind)
	}
	s := &Server{Kind: kind}
	for _, o := range opts {
		o(s)
	}
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
	if kind == KindGRPCSyncStatus {
		g, err := s.syncStatusServer(ctx)
		if err != nil {
			_ = lis.Close()
			return nil, err
		}
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
	case KindGatewaySyncStatus:
		if h, err = s.syncStatusGateway(ctx); err != nil {
			_ = lis.Close()
			return nil, err
		}
	case KindGoSDKStateless, KindGoSDKStateful:
		h = mcpMux(NewGoSDK(kind == KindGoSDKStateless))
	case KindMark3Stateless, KindMark3Stateful, KindMark3Modern:
		h = mcpMux(NewMark3(kind != KindMark3Stateful))
	case KindMark3SyncStatus, KindMark3SyncStatusModern:
		tool, err := s.syncStatusTool(ctx)
		if err != nil {
			_ = lis.Close()
			return nil, err
		}
		h = mcpMux(NewMark3SyncStatus(tool))
	case KindHTTPFloor:
		h = mcpMux(HTTPFloor())
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

// syncStatusServer returns the same-work gRPC server (syncStatusTool).
func (s *Server) syncStatusServer(ctx context.Context) (*grpc.Server, error) {
	tool, err := s.syncStatusTool(ctx)
	if err != nil {
		return nil, err
	}
	return NewSyncStatusServer(tool), nil
}

// syncStatusTool is SyncStatusTool on a seeded store (syncStatusStore) and
// the WithKnowledge directory.
func (s *Server) syncStatusTool(ctx context.Context) (*knowledgesync.Service, error) {
	st, err := s.syncStatusStore(ctx)
	if err != nil {
		return nil, err
	}
	return SyncStatusTool(st, s.knowledgeDir)
}

// syncStatusStore opens a seeded SQLite store in a temporary directory;
// both are removed at Close.
func (s *Server) syncStatusStore(ctx context.Context) (store.Store, error) {
	dir, err := os.MkdirTemp("", "toolsvc-baseline-")
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { _ = os.RemoveAll(dir) })
	st, err := OpenSyncStatusStore(ctx, filepath.Join(dir, "baseline.db"))
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { _ = st.Close() })
	return st, nil
}

// syncStatusGateway returns the same-work REST baseline: the mux and
// handlers protoc-gen-grpc-gateway generated for the sync service (the
// routes toolsvc serves, e.g. GET /v1/sync/status), calling the same-work
// gRPC server (NewSyncStatusServer on its own seeded store) over bufconn.
func (s *Server) syncStatusGateway(ctx context.Context) (http.Handler, error) {
	g, err := s.syncStatusServer(ctx)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, g.Stop)
	bl := bufconn.Listen(bufconnSize)
	go func() { _ = g.Serve(bl) }()
	conn, err := grpc.NewClient("passthrough:///bufconn", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return bl.DialContext(ctx) }))
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { _ = conn.Close() })
	mux := runtime.NewServeMux()
	if err := syncv1.RegisterSyncServiceHandlerClient(ctx, mux, syncv1.NewSyncServiceClient(conn)); err != nil {
		return nil, err
	}
	return mux, nil
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
