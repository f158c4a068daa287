package interceptors

import (
	"context"
	"crypto/tls"
	"errors"
	"strconv"
	"strings"

	grpcauth "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// authenticate establishes who is calling, from the bearer credential or,
// without one, from the client certificate mutual TLS verified (the
// connection's TLS state: gRPC's peer, or the HTTP request's, which the
// HTTP door and the in-process channel carry in the same peer), then completes the ToolContext with the headers the credential allows:
// x-user-id only for principals that may act for users, x-org-id,
// x-team-id and x-project-id only where the credential fixes none.
// Failures are counted and logged at a bounded rate by failures. It is
// go-grpc-middleware auth's AuthFunc (chain.go).
func authenticate(a *auth.Authenticator, failures *AuthFailures) grpcauth.AuthFunc {
	return func(ctx context.Context) (context.Context, error) {
		c := CallFrom(ctx)
		md := c.md
		var authz string
		if vs := md.Get(wire.HeaderAuthorization); len(vs) > 0 {
			authz = vs[0]
		}
		p, err := a.AuthenticatePeer(ctx, authz, peerTLS(ctx))
		if err != nil {
			failures.Record(c.Transport, err)
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
		tc := c.Context
		tc.Tenant, tc.Subject = p.Tenant, p.Subject
		tc.UserId = p.Identifiers[auth.IdentifierUserID]
		if u := header(md, wire.HeaderUserID, 128); u != "" {
			if !p.ActForUsers && !p.Anonymous {
				c.Decision, c.Reason = "deny", "x-user-id not allowed for this credential"
				return nil, toolerr.New(toolerr.Forbidden, "this credential may not act for users: remove the x-user-id header")
			}
			tc.UserId = u
		}
		f := &callctx.Facts{Tenant: p.Tenant, Subject: p.Subject, Identifiers: Identifiers(ctx), Transport: c.Transport,
			CorrelationID: tc.GetCorrelationId(), TraceID: tc.GetTraceId(), Metadata: MetadataStrings(tc.GetMetadata())}
		ctx = callctx.With(auth.NewContext(ctx, p), f)
		if p.Method == auth.MethodJWT { // the subject token of a token exchange (upstream)
			if tok, ok := strings.CutPrefix(authz, "Bearer "); ok {
				ctx = callctx.WithSubjectToken(ctx, tok)
			}
		}
		return ctx, nil
	}
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

// Identifiers returns the memory-layer identifiers of the current call:
// org_id, team_id, project_id and user_id from the credential, completed by
// the x-org-id, x-team-id and x-project-id headers where the credential is
// silent, plus session_id and agent_id from the ToolContext.
func Identifiers(ctx context.Context) map[string]string {
	out := map[string]string{}
	c := CallFrom(ctx)
	if c == nil {
		return out
	}
	md := c.md
	if p := c.Principal; p != nil {
		for k, v := range p.Identifiers {
			if v != "" {
				out[k] = v
			}
		}
		out["tenant"] = p.Tenant
	}
	for _, h := range layerHeaders {
		if out[h.key] == "" {
			if v := header(md, h.header, 128); v != "" {
				out[h.key] = v
			}
		}
	}
	if u := c.Context.GetUserId(); u != "" {
		out[auth.IdentifierUserID] = u
	}
	if s := c.Context.GetSessionId(); s != "" {
		out["session_id"] = s
	}
	if a := c.Context.GetAgentId(); a != "" && a != "unknown" {
		out["agent_id"] = a
	}
	return out
}
