package interceptors

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
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
	// Context is the tool contract's ToolContext.
	Context *toolsvcv1.ToolContext
	// Start is when the call entered the chain.
	Start time.Time
	// Cached is true when the result came from the cache.
	Cached bool
	// ran is set once the tool's handler was entered (atomic: a cache
	// load may run the handler on another goroutine).
	ran atomic.Bool
	// IdempotencyKey is the key the caller sent (Idempotency-Key header or
	// metadata, or MCP _meta), empty when none.
	IdempotencyKey string
	// Replayed is true when the result is the stored answer of an earlier
	// call with the same idempotency key.
	Replayed bool
	// Decision and Reason are what the audit trail records.
	Decision, Reason string

	// pending is an error found while resolving the call, returned once
	// the caller is authenticated.
	pending error
	// unknownTool is the name ToolService.CallTool asked for when the
	// registry has no such tool, so that the decision is audited under it.
	unknownTool string
	// md is the incoming metadata, copied once for every step that reads
	// headers.
	md metadata.MD
}

// Ran reports whether the tool's handler was entered: a failure after it
// may have had an effect.
func (c *Call) Ran() bool { return c.ran.Load() }

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

func transportOf(ctx context.Context) string { return callctx.TransportOf(ctx) }
