// Package callctx holds the facts of one tool call (who calls, for which
// tenant and scopes, over which transport, under which trace and deadline)
// in its context: Facts is the one record of the caller that crosses
// packages (the tool contract's ToolContext is rendered from it,
// toolresult.ToolContext). The interceptor chain writes them once the
// caller is authenticated; tools, transports and stores read them. It
// imports nothing of toolsvc's, so that the layer that is called never
// needs to know the layer that calls it (docs/ARCHITECTURE.md).
package callctx

import (
	"context"
	"maps"
	"time"
)

// Transports a call can arrive by.
const (
	TransportGRPC = "grpc"
	TransportMCP  = "mcp"
	TransportREST = "rest"
)

// Identifier keys of Facts.Identifiers.
const (
	KeyTenant    = "tenant"
	KeyOrgID     = "org_id"
	KeyTeamID    = "team_id"
	KeyProjectID = "project_id"
	KeyUserID    = "user_id"
	KeySessionID = "session_id"
	KeyAgentID   = "agent_id"
)

// Facts are what is known of one authenticated call. The chain fills them
// in before the tool runs and never changes them after; readers must not
// change them either.
type Facts struct {
	// Tenant owns everything the call reads or writes.
	Tenant string
	// Subject is the authenticated principal.
	Subject string
	// Principal is the authenticated caller as identity (internal/auth)
	// made it, an *auth.Principal: its grants, roles and tool sets. The
	// door reads it to decide what the caller may see; tools read the
	// other fields, which hold all they need.
	Principal Principal
	// Identifiers scope the memory and knowledge layers: the tenant, the
	// org, team, project and user ids of the credential (completed by the
	// headers it may send), the session and agent ids, keyed as above.
	Identifiers map[string]string
	// Transport is grpc, mcp or rest.
	Transport string
	// AgentVersion is the calling agent's version (x-agent-version), ""
	// when it sent none; its id is Identifiers[KeyAgentID].
	AgentVersion string
	// CorrelationID and TraceID tie the call to the caller's logs and
	// traces.
	CorrelationID, TraceID string
	// Start is when the call entered the chain.
	Start time.Time
	// Deadline is when the call's budget ends (zero: none).
	Deadline time.Time
	// Metadata is the ToolContext's metadata, flattened: the client's
	// name, version and user agent, the transport, and the request
	// headers the operator allowed as "header.<name>" (never a
	// credential).
	Metadata map[string]string
}

// Principal is what a leaf package can say of the authenticated caller:
// whether it holds a permission ("{resource}:{action}"). The chain puts
// identity's own principal here (internal/auth's *Principal).
type Principal interface {
	Allows(permission string) bool
}

// ID returns the identifier key of the call ("" when unknown).
func (f *Facts) ID(key string) string {
	if f == nil {
		return ""
	}
	return f.Identifiers[key]
}

// CloneIdentifiers returns a copy of the identifiers a reader may change.
func (f *Facts) CloneIdentifiers() map[string]string {
	if f == nil {
		return map[string]string{}
	}
	out := maps.Clone(f.Identifiers)
	if out == nil {
		out = map[string]string{}
	}
	return out
}

type factsKey struct{}

// With returns ctx carrying f.
func With(ctx context.Context, f *Facts) context.Context {
	return context.WithValue(ctx, factsKey{}, f)
}

// From returns the facts of the current call, or nil outside an
// authenticated call.
func From(ctx context.Context) *Facts {
	f, _ := ctx.Value(factsKey{}).(*Facts)
	return f
}

type authenticatedKey struct{}

// WithAuthenticated returns ctx carrying f, the caller an in-process
// transport authenticated before it hands the call to the chain: f.Principal
// is who it found, f.Transport the transport it marked ctx with
// (WithTransport). The chain's auth step then takes f.Principal instead of
// verifying the same credential a second time. It does so only when
// TransportOf(ctx) is f.Transport and not grpc, and no chain has run in ctx
// yet (From(ctx) is nil): context values do not cross the network, so no
// network caller can set either, and a tool calling the chain again in
// process authenticates with its own credentials.
func WithAuthenticated(ctx context.Context, f *Facts) context.Context {
	return context.WithValue(ctx, authenticatedKey{}, f)
}

// Authenticated returns the caller WithAuthenticated put in ctx, when the
// chain may take it as the call's principal (see WithAuthenticated); nil
// otherwise.
func Authenticated(ctx context.Context) *Facts {
	f, _ := ctx.Value(authenticatedKey{}).(*Facts)
	if f == nil || f.Principal == nil || f.Transport == "" || f.Transport == TransportGRPC ||
		f.Transport != TransportOf(ctx) || From(ctx) != nil {
		return nil
	}
	return f
}

type transportKey struct{}

// WithTransport marks ctx as coming from transport (mcp or rest). Only
// in-process callers can set it: context values do not cross the network,
// so a network caller is always grpc.
func WithTransport(ctx context.Context, transport string) context.Context {
	return context.WithValue(ctx, transportKey{}, transport)
}

// TransportOf returns the transport WithTransport set, else grpc.
func TransportOf(ctx context.Context) string {
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
