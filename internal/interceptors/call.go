package interceptors

import (
	"context"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/registry"
)

// Transports.
const (
	TransportGRPC = "grpc"
	TransportMCP  = "mcp"
	TransportREST = "rest"
)

// Call is the state of one call as it moves through the chain.
type Call struct {
	// FullMethod is the gRPC method that was invoked.
	FullMethod string
	// Tool is the tool being called; nil for methods that are not tools
	// (ListTools, GetTool, health).
	Tool *registry.Tool
	// Request is the typed tool request: the RPC's request, or the
	// arguments of ToolService.CallTool decoded into the tool's input type.
	Request proto.Message
	// Generic is true when the tool was called through ToolService.CallTool.
	Generic bool
	// Transport is grpc, mcp or rest.
	Transport string
	// Principal is the authenticated caller, once auth has run.
	Principal *auth.Principal
	// Context is seed 000's ToolContext.
	Context *toolsvcv1.ToolContext
	// Start is when the call entered the chain.
	Start time.Time
	// Cached is true when the result came from the cache.
	Cached bool
	// Decision and Reason are what the audit trail records.
	Decision, Reason string

	// pending is an error found while resolving the call, returned once
	// the caller is authenticated.
	pending error
	// md is the incoming metadata, copied once for every step that reads
	// headers.
	md metadata.MD
}

type callKey struct{}

// CallFrom returns the Call of ctx, or nil outside the chain.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

func withCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// ToolContext returns the ToolContext of the current call (never nil).
func ToolContext(ctx context.Context) *toolsvcv1.ToolContext {
	if c := CallFrom(ctx); c != nil && c.Context != nil {
		return c.Context
	}
	return &toolsvcv1.ToolContext{}
}

// PrincipalFrom returns the authenticated principal of the current call.
func PrincipalFrom(ctx context.Context) *auth.Principal {
	if c := CallFrom(ctx); c != nil {
		return c.Principal
	}
	return nil
}

type transportKey struct{}

// WithTransport marks ctx as coming from transport (mcp or rest). Only
// in-process callers can set it: context values do not cross the network,
// so a network caller is always grpc.
func WithTransport(ctx context.Context, transport string) context.Context {
	return context.WithValue(ctx, transportKey{}, transport)
}

func transportOf(ctx context.Context) string {
	if t, ok := ctx.Value(transportKey{}).(string); ok && t != "" {
		return t
	}
	return TransportGRPC
}

// ProgressFunc reports progress of a slow tool: done out of total (0 when
// unknown) with a message.
type ProgressFunc func(done, total float64, message string)

type progressKey struct{}

// WithProgress attaches a progress reporter (the MCP bridge does when the
// client sent a progress token).
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// Progress reports progress if the caller asked for it; otherwise it does
// nothing. Tools call it freely.
func Progress(ctx context.Context, done, total float64, message string) {
	if f, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && f != nil {
		f(done, total, message)
	}
}
