package auth

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// Authentication methods recorded in [Principal.Method].
const (
	MethodAPIKey    = "api_key"
	MethodJWT       = "jwt"
	MethodAnonymous = "anonymous"
	// MethodClientCert is a client certificate verified by mutual TLS.
	MethodClientCert = "client_cert"
)

// Identifier names used as keys of [Principal.Identifiers].
const (
	IdentifierOrgID     = "org_id"
	IdentifierTeamID    = "team_id"
	IdentifierProjectID = "project_id"
	IdentifierUserID    = "user_id"
)

// identifierNames are the only keys accepted in identifiers and
// identifiers_claims, so that a typo in the auth file is an error and not a
// silently missing scope.
var identifierNames = []string{IdentifierOrgID, IdentifierTeamID, IdentifierProjectID, IdentifierUserID}

// Principal is the authenticated caller. It never holds the raw token.
type Principal struct {
	// Subject identifies the caller (the subject of its API key or client
	// certificate entry, or the JWT subject claim).
	Subject string
	// Tenant is the tenant every tenant-scoped tool call is confined to.
	Tenant string
	// Permissions are the grants, "{resource}:{action}", "{resource}:*" or "*".
	Permissions []string
	// Roles are the roles of the auth file granted to the caller; their
	// grants are already in Permissions.
	Roles []string
	// ToolSets are the tool sets the caller's entry and roles are bound
	// to; empty: not bound.
	ToolSets []string
	// View is what the caller sees: its bound sets, or the one set it
	// chose (Authenticator.SelectToolSet); nil sees every tool.
	View *ToolView
	// ReadOnly principals may not call side-effecting tools.
	ReadOnly bool
	// ActForUsers principals may name an end user with x-user-id.
	ActForUsers bool
	// Anonymous is true only for the development principal.
	Anonymous bool
	// Identifiers holds org_id, team_id, project_id and user_id when known.
	Identifiers map[string]string
	// Method is how the caller authenticated: "api_key", "jwt",
	// "client_cert" or "anonymous".
	Method string
	// ExpiresAt is the JWT's or client certificate's expiry; zero for API
	// keys and anonymous.
	ExpiresAt time.Time
	// credential names the auth file entry the principal came from ("key:"
	// and the key's SHA-256, "cert:" and the certificate match, "jwt:" and
	// the issuer), so that [Authenticator.Admits] can tell after a reload
	// whether it still stands. Never shown anywhere.
	credential string
}

// Allows reports whether p holds a grant covering permission, which has the
// form "{resource}:{action}" (e.g. "memory:read").
//
// Wildcards have meaning only in grants, and only two are supported: "*"
// covers every permission, and "{resource}:*" covers every action on one
// resource. Every other grant must match exactly; in particular "*:read" is
// not a wildcard (LoadFile rejects it) because "read" on every present and
// future resource is too broad a grant to make by accident. A nil principal
// or an empty permission is never allowed.
func (p *Principal) Allows(permission string) bool {
	if p == nil || permission == "" {
		return false
	}
	resource, action, hasColon := strings.Cut(permission, ":")
	scoped := hasColon && resource != "" && action != ""
	for _, g := range p.Permissions {
		switch {
		case g == "*", g == permission:
			return true
		case scoped && strings.HasSuffix(g, ":*") && g[:len(g)-2] == resource:
			return true
		}
	}
	return false
}

// Clone returns a deep copy of p, for a holder that changes it (selects a
// tool set on it) while others still read the original.
func (p *Principal) Clone() *Principal { return p.clone() }

// clone returns a deep copy, so that callers may not alter the authenticator's
// templates through a returned principal.
func (p *Principal) clone() *Principal {
	c := *p
	c.Permissions = slices.Clone(p.Permissions)
	c.Identifiers = maps.Clone(p.Identifiers)
	c.Roles = slices.Clone(p.Roles)
	c.ToolSets = slices.Clone(p.ToolSets)
	return &c
}
