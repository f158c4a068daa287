package interceptors

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

// call is the chain's own state of one call as it moves through the
// steps; nothing outside the chain sees it. What leaves the chain is its
// Facts (callctx.With, once auth has run) and the Admission policy gives.
type call struct {
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
	// Facts is the record of who is calling: the boundary fills in what
	// the request says (transport, start, trace and correlation ids, the
	// agent, the metadata), auth completes it (principal, tenant, subject,
	// identifiers) and hands it on; deadline sets its Deadline.
	Facts callctx.Facts
	// Principal is the authenticated caller, once auth has run (also
	// Facts.Principal, there as the interface a leaf package can name).
	Principal *auth.Principal
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
func (c *call) Ran() bool { return c.ran.Load() }

type callKey struct{}

// callFrom returns the call of ctx, or nil outside the chain.
func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}
