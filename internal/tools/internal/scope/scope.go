// Package scope is what the built-in tools share about the caller: the
// tenant, the identifier that scopes each memory layer (always taken from
// the request context, never from tool arguments), and the mapping of store
// errors to tool errors.
package scope

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
)

// Identifier keys of callctx.Facts.Identifiers.
const (
	KeyTenant    = callctx.KeyTenant
	KeyOrgID     = callctx.KeyOrgID
	KeyTeamID    = callctx.KeyTeamID
	KeyProjectID = callctx.KeyProjectID
	KeyUserID    = callctx.KeyUserID
	KeySessionID = callctx.KeySessionID
	KeyAgentID   = callctx.KeyAgentID
	// KeySubject is the authenticated principal's subject: the owner of its
	// session and agent memories when it acts for no user.
	KeySubject = "subject"
)

// ownerSep joins an owner to a client-chosen session or agent id in the
// stored scope id. It cannot occur in either part (headers and subjects
// are printable), so "a\x1fb" is never also "a\x1f" + "b" of another owner,
// and rows whose owner is empty (sessions stored before owners were
// recorded, migration 0005) match no caller.
const ownerSep = "\x1f"

// owned marks the layers whose identifier a caller chooses freely (a
// header, or MCP's clientInfo): a session id or agent id is a name, not a
// secret, so the stored scope binds it to the principal that owns it.
var owned = map[store.Layer]bool{store.LayerSession: true, store.LayerAgent: true}

// source says which identifier scopes a layer and how a caller supplies it.
type source struct {
	key, noun, how string
}

var sources = map[store.Layer]source{
	store.LayerAgent: {KeyAgentID, "an agent id", "send the x-agent-id header"},
	store.LayerUser: {KeyUserID, "a user id", "use a credential bound to a user (identifiers.user_id in the auth file), " +
		"or send the x-user-id header with a credential that may act for users (act_for_users: true)"},
	store.LayerSession: {KeySessionID, "a session id", "send the x-session-id header"},
	store.LayerProject: {KeyProjectID, "a project id", "use a credential bound to a project, or send the x-project-id header"},
	store.LayerTeam:    {KeyTeamID, "a team id", "use a credential bound to a team, or send the x-team-id header"},
	store.LayerOrg:     {KeyOrgID, "an org id", "use a credential bound to an org, or send the x-org-id header"},
	store.LayerCompany: {KeyTenant, "a tenant", "use a credential that carries a tenant"},
}

// Caller is who is calling, as far as scoping is concerned.
type Caller struct {
	// Tenant owns everything the call reads or writes.
	Tenant string
	// IDs are the caller's identifiers keyed as callctx.Facts.Identifiers.
	IDs map[string]string
}

// FromContext returns the caller of the current tool call, from the facts
// the chain recorded (callctx), or else from WithCaller. A call without a
// tenant is FORBIDDEN (the chain's policy step already refuses it for
// tenant-scoped tools; this guards handlers reached another way).
func FromContext(ctx context.Context) (Caller, error) {
	f := callctx.From(ctx)
	if f == nil {
		if c, ok := ctx.Value(callerKey{}).(Caller); ok && c.Tenant != "" {
			return c.clone(), nil
		}
		return Caller{}, toolerr.New(toolerr.Forbidden, "the credential carries no tenant")
	}
	ids := f.CloneIdentifiers()
	tenant := f.Tenant
	if tenant == "" {
		tenant = ids[KeyTenant]
	}
	if tenant == "" {
		return Caller{}, toolerr.New(toolerr.Forbidden, "the credential carries no tenant")
	}
	ids[KeyTenant] = tenant
	if f.Subject != "" {
		ids[KeySubject] = f.Subject
	}
	return Caller{Tenant: tenant, IDs: ids}, nil
}

// owner is who owns the caller's session and agent memories: the end user
// it acts for (or is bound to), else its own subject; "" when neither is
// known.
func (c Caller) owner() string {
	if u := c.IDs[KeyUserID]; u != "" {
		return "user:" + u
	}
	if s := c.IDs[KeySubject]; s != "" {
		return "subject:" + s
	}
	return ""
}

// ScopeID returns the identifier that scopes layer for this caller: the
// tenant for company, the user, project, team or org id, and for the
// session and agent layers the session or agent id bound to its owner (the
// user the caller acts for, else its subject), so that another principal
// of the tenant naming the same session reads nothing of it. ok is false
// when the caller's context does not supply the identifier (or, for
// session and agent, an owner).
func (c Caller) ScopeID(layer store.Layer) (id string, ok bool) {
	src, known := sources[layer]
	if !known {
		return "", false
	}
	id = c.IDs[src.key]
	if id == "" {
		return "", false
	}
	if owned[layer] {
		o := c.owner()
		if o == "" {
			return "", false
		}
		id = o + ownerSep + id
	}
	return id, true
}

// Missing describes, for an agent, the identifier layer needs and how to
// supply it, e.g. `layer "session" needs a session id: send the
// x-session-id header`.
func Missing(layer store.Layer) string {
	src, ok := sources[layer]
	if !ok {
		return fmt.Sprintf("layer %q is not a memory layer", layer)
	}
	return fmt.Sprintf("layer %q needs %s: %s", layer, src.noun, src.how)
}

// IdentifierKey names the identifier that scopes layer, e.g. "session_id".
func IdentifierKey(layer store.Layer) string { return sources[layer].key }

// MissingError is INVALID_INPUT on field for a layer whose identifier the
// caller's context lacks; its details name the layer and the identifier.
func MissingError(field string, layer store.Layer) *toolerr.Error {
	return toolerr.Invalid(field, "layer.identifier", "%s", Missing(layer)).
		WithDetails(map[string]any{"layer": string(layer), "missingIdentifier": IdentifierKey(layer)})
}

// Usable returns the layers whose identifier the caller supplies, from
// the narrowest, in store.Layers order.
func (c Caller) Usable() []store.Layer {
	var out []store.Layer
	for _, l := range store.Layers {
		if _, ok := c.ScopeID(l); ok {
			out = append(out, l)
		}
	}
	return out
}

// LayerError is MissingError for this caller: the message also names the
// layers its credential can use, and the error suggests calling tool
// again with those: for the field "layer" (one layer, as add-memory takes)
// the narrowest that persists beyond a session, for a list ("layers[2]")
// all of them. An agent that left the layer to its default learns which
// one works.
func (c Caller) LayerError(tool, field string, layer store.Layer) *toolerr.Error {
	usable := c.Usable()
	if len(usable) == 0 {
		return MissingError(field, layer)
	}
	names := make([]string, len(usable))
	for i, l := range usable {
		names[i] = string(l)
	}
	e := toolerr.Invalid(field, "layer.identifier", "%s; this credential can use the layer(s) %s", Missing(layer), strings.Join(names, ", ")).
		WithDetails(map[string]any{"layer": string(layer), "missingIdentifier": IdentifierKey(layer), "usableLayers": names})
	pick := usable[0]
	for _, l := range usable {
		if l != store.LayerSession && l != store.LayerAgent {
			pick = l
			break
		}
	}
	if field != "layer" {
		return e.WithNext(tool, "call again with the layers this credential supplies", map[string]any{"layers": names})
	}
	return e.WithNext(tool, fmt.Sprintf("call again with layer %q, which this credential supplies", pick), map[string]any{"layer": string(pick)})
}

// StoreError maps a store error to a tool error: store.ErrNotFound becomes
// NOT_FOUND with message notFound, a *store.UnavailableError becomes a
// retryable PROVIDER_ERROR, and anything else is returned as is (the
// boundary reports it as INTERNAL without showing it to the caller).
func StoreError(err error, notFound string, details map[string]any) error {
	var unavailable *store.UnavailableError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		e := toolerr.Wrap(err, toolerr.NotFound, "%s", notFound)
		if details != nil {
			e = e.WithDetails(details)
		}
		return e
	case errors.As(err, &unavailable):
		return toolerr.Wrap(err, toolerr.ProviderError, "the storage provider is unavailable; retry shortly")
	default:
		return err
	}
}

type callerKey struct{}

// WithCaller returns a context whose caller is c, for in-process callers
// that run a tool outside the interceptor chain (benchmarks, tests of the
// ranking). Inside the chain it has no effect: the chain's facts win.
// c.IDs gets c.Tenant under KeyTenant.
func WithCaller(ctx context.Context, c Caller) context.Context {
	c = c.clone()
	c.IDs[KeyTenant] = c.Tenant
	return context.WithValue(ctx, callerKey{}, c)
}

func (c Caller) clone() Caller {
	ids := make(map[string]string, len(c.IDs)+1)
	for k, v := range c.IDs {
		ids[k] = v
	}
	return Caller{Tenant: c.Tenant, IDs: ids}
}
