package interceptors_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/toolresult"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

// runAuth runs the auth step with API keys "agent" and "frontend" (which
// may act for users) and the given headers.
func runAuth(t *testing.T, md metadata.MD) (*interceptors.Call, *fakeNext, *prometheus.Registry, error) {
	t.Helper()
	a, err := auth.New(context.Background(), &auth.Config{APIKeys: []auth.APIKeyConfig{
		{KeySHA256: auth.HashKey("agent"), Subject: "agent-1", Tenant: "acme", Permissions: []string{"*"},
			Identifiers: map[string]string{auth.IdentifierUserID: "u-own"}},
		{KeySHA256: auth.HashKey("frontend"), Subject: "web", Tenant: "acme", Permissions: []string{"*"}, ActForUsers: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c := &interceptors.Call{Tool: memTool(t, searchMethod, nil), Facts: callctx.Facts{Transport: callctx.TransportREST, TraceID: "trace-u", CorrelationID: "corr-u"}}
	interceptors.SetMetadata(c, md)
	next := &fakeNext{}
	_, err = runStep(context.Background(), interceptors.AuthStep(a, reg), c, nil, next)
	if err != nil && next.count() != 0 {
		t.Errorf("refused (%v) but the handler ran", err)
	}
	return c, next, reg, err
}

func TestAuthStepSetsThePrincipalAndFacts(t *testing.T) {
	c, next, _, err := runAuth(t, metadata.Pairs(wire.HeaderAuthorization, "Bearer agent"))
	if err != nil || next.count() != 1 {
		t.Fatalf("err %v, handler ran %d times", err, next.count())
	}
	if c.Principal == nil || c.Principal.Subject != "agent-1" || c.Principal.Tenant != "acme" {
		t.Fatalf("principal %+v, want agent-1 of acme", c.Principal)
	}
	if tc := toolresult.ToolContext(&c.Facts); tc.GetSubject() != "agent-1" || tc.GetTenant() != "acme" || tc.GetUserId() != "u-own" {
		t.Errorf("ToolContext %v, want subject, tenant and the credential's user", tc)
	}
	if f := callctx.From(next.ctx); f == nil || f.Principal != c.Principal {
		t.Errorf("handler's context principal %v, want the call's", f)
	}
	f := callctx.From(next.ctx)
	if f == nil || f.Tenant != "acme" || f.Subject != "agent-1" || f.TraceID != "trace-u" || f.Transport != "rest" || f.ID(auth.IdentifierUserID) != "u-own" {
		t.Errorf("callctx facts %+v, want the principal's", f)
	}
}

func TestAuthStepRefusesBadCredentials(t *testing.T) {
	for name, md := range map[string]metadata.MD{
		"unknown key": metadata.Pairs(wire.HeaderAuthorization, "Bearer nope"),
		"none":        metadata.MD{},
	} {
		t.Run(name, func(t *testing.T) {
			c, _, reg, err := runAuth(t, md)
			e := wantCode(t, err, toolerr.Unauthorized)
			if e.Details["reason"] == nil || e.Details["reason"] != c.Reason {
				t.Errorf("details %v, reason %q: want the auth reason in both", e.Details, c.Reason)
			}
			if c.Decision != "deny" || c.Principal != nil {
				t.Errorf("decision %q principal %v, want deny and none", c.Decision, c.Principal)
			}
			if got := counter(t, reg, "toolsvc_auth_failures_total", map[string]string{"transport": "rest"}); got != 1 {
				t.Errorf("toolsvc_auth_failures_total{transport=rest} = %v, want 1", got)
			}
		})
	}
}

func TestAuthStepUserHeaderOnlyForCredentialsActingForUsers(t *testing.T) {
	c, _, _, err := runAuth(t, metadata.Pairs(wire.HeaderAuthorization, "Bearer agent", wire.HeaderUserID, "u-other"))
	wantCode(t, err, toolerr.Forbidden)
	if c.Reason != "x-user-id not allowed for this credential" {
		t.Errorf("reason %q", c.Reason)
	}

	c, next, _, err := runAuth(t, metadata.Pairs(wire.HeaderAuthorization, "Bearer frontend", wire.HeaderUserID, "u-42"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Facts.ID(callctx.KeyUserID) != "u-42" || callctx.From(next.ctx).ID(auth.IdentifierUserID) != "u-42" {
		t.Errorf("user %q / %q, want u-42 from the header", c.Facts.ID(callctx.KeyUserID), callctx.From(next.ctx).ID(auth.IdentifierUserID))
	}
}

// TestAuthStepTakesTheTransportsPrincipal: a call an in-process transport
// already authenticated (callctx.WithAuthenticated, as the MCP bridge
// does) is not verified again: the chain takes the transport's principal,
// whatever credential the metadata holds. A network caller cannot set
// context values, and the chain takes the principal only when the context
// is marked with the same in-process transport and no chain ran in it
// yet; otherwise it authenticates the metadata's credential (here a bad
// one: refused, and counted once).
func TestAuthStepTakesTheTransportsPrincipal(t *testing.T) {
	given := &auth.Principal{Subject: "bridge-said", Tenant: "acme", Permissions: []string{"*"}}
	marked := func(transport string) context.Context {
		ctx := callctx.WithTransport(context.Background(), transport)
		return callctx.WithAuthenticated(ctx, &callctx.Facts{Transport: transport, Principal: given})
	}
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		transport string
		taken     bool
	}{
		{"in process", marked(callctx.TransportMCP), callctx.TransportMCP, true},
		{"not marked in process", callctx.WithAuthenticated(context.Background(), &callctx.Facts{Transport: callctx.TransportMCP, Principal: given}), callctx.TransportGRPC, false},
		{"marked grpc", marked(callctx.TransportGRPC), callctx.TransportGRPC, false},
		{"another transport", callctx.WithAuthenticated(callctx.WithTransport(context.Background(), callctx.TransportREST), &callctx.Facts{Transport: callctx.TransportMCP, Principal: given}), callctx.TransportREST, false},
		{"a chain ran already", callctx.With(marked(callctx.TransportMCP), &callctx.Facts{Transport: callctx.TransportMCP, Principal: given}), callctx.TransportMCP, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := auth.New(context.Background(), &auth.Config{APIKeys: []auth.APIKeyConfig{
				{KeySHA256: auth.HashKey("agent"), Subject: "agent-1", Tenant: "acme", Permissions: []string{"*"}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			c := &interceptors.Call{Tool: memTool(t, searchMethod, nil), Facts: callctx.Facts{Transport: tc.transport}}
			interceptors.SetMetadata(c, metadata.Pairs(wire.HeaderAuthorization, "Bearer nope"))
			next := &fakeNext{}
			_, err = runStep(tc.ctx, interceptors.AuthStep(a, reg), c, nil, next)
			if !tc.taken {
				wantCode(t, err, toolerr.Unauthorized)
				if a.Verifications() != 1 || counter(t, reg, "toolsvc_auth_failures_total", map[string]string{"transport": tc.transport}) != 1 {
					t.Errorf("verified %d times, failures %v: want the credential verified and refused once", a.Verifications(),
						counter(t, reg, "toolsvc_auth_failures_total", map[string]string{"transport": tc.transport}))
				}
				return
			}
			if err != nil || next.count() != 1 || c.Principal != given || a.Verifications() != 0 {
				t.Fatalf("err %v, ran %d, principal %+v, verified %d: want the transport's principal, nothing verified", err, next.count(), c.Principal, a.Verifications())
			}
			if f := callctx.From(next.ctx); f == nil || f.Subject != "bridge-said" || callctx.Authenticated(next.ctx) != nil {
				t.Errorf("facts %+v: want the principal's, and a tool calling the chain again authenticating itself", f)
			}
		})
	}
}
