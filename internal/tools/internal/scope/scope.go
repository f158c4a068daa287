// Package scope is what the built-in tools share about the caller: the
// tenant, the identifier that scopes each memory layer (always taken from
// the request context, never from tool arguments), and the mapping of store
// errors to tool errors.
package scope

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/toolerr"
)

// Identifier keys of interceptors.Identifiers.
const (
	KeyTenant    = "tenant"
	KeyOrgID     = "org_id"
	KeyTeamID    = "team_id"
	KeyProjectID = "project_id"
	KeyUserID    = "user_id"
	KeySessionID = "session_id"
	KeyAgentID   = "agent_id"
)

// source says which identifier scopes a layer and how a caller supplies it.
type source struct {
	key, noun, how string
}

var sources = map[store.Layer]source{
	store.LayerAgent:   {KeyAgentID, "an agent id", "send the x-agent-id header"},
	store.LayerUser:    {KeyUserID, "a user id", "use a credential bound to a user, or send the x-user-id header with a credential that may act for users"},
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
	// IDs are the caller's identifiers keyed as interceptors.Identifiers.
	IDs map[string]string
}

// FromContext returns the caller of the current tool call. A call without a
// tenant is FORBIDDEN (the chain's policy step already refuses it for
// tenant-scoped tools; this guards handlers reached another way).
func FromContext(ctx context.Context) (Caller, error) {
	if interceptors.CallFrom(ctx) == nil {
		if c, ok := ctx.Value(callerKey{}).(Caller); ok && c.Tenant != "" {
			return c.clone(), nil
		}
	}
	ids := interceptors.Identifiers(ctx)
	tenant := ids[KeyTenant]
	if p := interceptors.PrincipalFrom(ctx); p != nil && p.Tenant != "" {
		tenant = p.Tenant
	}
	if tenant == "" {
		return Caller{}, toolerr.New(toolerr.Forbidden, "the credential carries no tenant")
	}
	ids[KeyTenant] = tenant
	return Caller{Tenant: tenant, IDs: ids}, nil
}

// ScopeID returns the identifier that scopes layer for this caller: the
// tenant for company, the agent, user, session, project, team or org id
// otherwise. ok is false when the caller's context does not supply it.
func (c Caller) ScopeID(layer store.Layer) (id string, ok bool) {
	src, known := sources[layer]
	if !known {
		return "", false
	}
	id = c.IDs[src.key]
	return id, id != ""
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
// ranking). Inside the chain it has no effect: the chain's identifiers win.
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
