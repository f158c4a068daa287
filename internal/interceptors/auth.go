package interceptors

import (
	"context"
	"crypto/tls"
	"errors"
	"strconv"
	"strings"

	grpcauth "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// authenticate establishes who is calling, from the bearer credential or,
// without one, from the client certificate mutual TLS verified (the
// connection's TLS state: gRPC's peer, or the HTTP request's, which the
// HTTP door and the in-process channel carry in the same peer), then
// completes the call's facts (principal, tenant, identifiers) with the
// headers the credential allows (an in-process transport that already
// authenticated the caller hands its principal on: transported):
// x-user-id only for principals that may act for users, x-org-id,
// x-team-id and x-project-id only where the credential fixes none.
// The facts then leave the chain in the context (callctx.With). Failures
// are counted and logged at a bounded rate by failures. It is
// go-grpc-middleware auth's AuthFunc (chain.go).
func authenticate(a *auth.Authenticator, failures *AuthFailures) grpcauth.AuthFunc {
	return func(ctx context.Context) (context.Context, error) {
		c := callFrom(ctx)
		md := c.md
		var authz string
		if vs := md.Get(wire.HeaderAuthorization); len(vs) > 0 {
			authz = vs[0]
		}
		p := transported(ctx, md)
		var err error
		if p == nil {
			p, err = a.AuthenticatePeer(ctx, authz, peerTLS(ctx))
		}
		if err != nil {
			failures.Record(c.Facts.Transport, err)
			c.Decision, c.Reason = "deny", "unauthenticated"
			var ae *auth.Error
			if errors.As(err, &ae) {
				c.Reason = ae.Reason.String()
				return nil, toolerr.Wrap(err, toolerr.Unauthorized, "%s", ae.Error()).
					WithDetails(map[string]any{"reason": ae.Reason.String()})
			}
			return nil, toolerr.Wrap(err, toolerr.Unauthorized, "invalid credentials")
		}
		c.Principal = p
		if set := md.Get(wire.HeaderToolSet); len(set) > 0 {
			if err := a.SelectToolSet(p, set[0]); err != nil {
				var se *auth.ToolSetError
				if !errors.As(err, &se) {
					se = &auth.ToolSetError{Set: set[0], Rule: "unknown tool set"}
				}
				c.Decision, c.Reason = "deny", RuleToolSet+": "+se.Rule+" "+strconv.Quote(se.Set[:min(len(se.Set), 64)])
				name := se.Set[:min(len(se.Set), 64)]
				return nil, toolerr.New(toolerr.NotFound, "no tool set %q: call without the %s header, or name a set your operator configured for this credential", name, wire.HeaderToolSet).
					WithDetails(map[string]any{"toolSet": name})
			}
		}
		userID := p.Identifiers[auth.IdentifierUserID]
		if u := header(md, wire.HeaderUserID, 128); u != "" {
			if !p.ActForUsers && !p.Anonymous {
				c.Decision, c.Reason = "deny", "x-user-id not allowed for this credential"
				return nil, toolerr.New(toolerr.Forbidden, "this credential may not act for users: remove the x-user-id header")
			}
			userID = u
		}
		f := &c.Facts
		f.Principal, f.Tenant, f.Subject = p, p.Tenant, p.Subject
		f.Identifiers = identifiers(p, md, userID)
		ctx = callctx.With(ctx, f)
		if p.Method == auth.MethodJWT { // the subject token of a token exchange (upstream)
			if tok, ok := strings.CutPrefix(authz, "Bearer "); ok {
				ctx = callctx.WithSubjectToken(ctx, tok)
			}
		}
		return ctx, nil
	}
}

// transported is the principal the in-process transport that took the
// call already authenticated from the same credential
// (callctx.Authenticated: the MCP bridge, which must answer a refusal with
// HTTP 401 before the call reaches the chain), or nil when the chain must
// authenticate the caller itself (every gRPC call, REST, and a tool calling
// the chain again). The credential is verified once per call either way.
// A principal the caller selects a tool set on is copied first:
// the transport may hand one principal to several calls.
func transported(ctx context.Context, md metadata.MD) *auth.Principal {
	f := callctx.Authenticated(ctx)
	if f == nil {
		return nil
	}
	p, _ := f.Principal.(*auth.Principal)
	if p != nil && len(md.Get(wire.HeaderToolSet)) > 0 {
		p = p.Clone()
	}
	return p
}

// peerTLS is the TLS state of the caller's connection, nil without TLS.
func peerTLS(ctx context.Context) *tls.ConnectionState {
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			st := ti.State // a copy, so that a plaintext call allocates nothing here
			return &st
		}
	}
	return nil
}

// layerHeaders are the headers that complete a credential's identifiers.
var layerHeaders = [...]struct{ key, header string }{
	{auth.IdentifierOrgID, wire.HeaderOrgID}, {auth.IdentifierTeamID, wire.HeaderTeamID}, {auth.IdentifierProjectID, wire.HeaderProjectID},
}

// identifiers are the memory-layer identifiers of a call by p: org_id,
// team_id, project_id and user_id from the credential, completed by the
// x-org-id, x-team-id and x-project-id headers where the credential is
// silent, userID (the credential's, or the x-user-id it may send), the
// tenant, and session_id and agent_id from the headers.
func identifiers(p *auth.Principal, md metadata.MD, userID string) map[string]string {
	out := make(map[string]string, len(p.Identifiers)+4)
	for k, v := range p.Identifiers {
		if v != "" {
			out[k] = v
		}
	}
	out[callctx.KeyTenant] = p.Tenant
	for _, h := range layerHeaders {
		if out[h.key] == "" {
			if v := header(md, h.header, 128); v != "" {
				out[h.key] = v
			}
		}
	}
	if userID != "" {
		out[callctx.KeyUserID] = userID
	}
	if s := header(md, wire.HeaderSessionID, 128); s != "" {
		out[callctx.KeySessionID] = s
	}
	if a := header(md, wire.HeaderAgentID, 128); a != "" && a != "unknown" {
		out[callctx.KeyAgentID] = a
	}
	return out
}
