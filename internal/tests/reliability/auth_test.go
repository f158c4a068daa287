package reliability

import (
	"context"
	"crypto/elliptic"
	"net/http"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// authServer starts a server that requires the credentials of
// testserver.WriteCredentials, and the transports it serves.
func authServer(t *testing.T) (*testserver.Server, *testserver.Credentials, []string) {
	t.Helper()
	c := testserver.WriteCredentials(t)
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) { cfg.AuthFile = c.AuthFile }})
	trs := []string{trGRPC, trREST}
	if mcpAvailable(t, s.HTTP) {
		trs = append(trs, trMCP)
	}
	return s, c, trs
}

// call is callOn against s with a bounded context.
func call(t *testing.T, s *testserver.Server, tr, token, tool string, args map[string]any, headers map[string]string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := callOn(ctx, s.Conn, s.HTTP, tr, token, tool, args, headers)
	if err != nil {
		t.Fatalf("%s %s: %v", tr, tool, err)
	}
	return o
}

// TestJWTAttacks sends forged and invalid JWTs over every transport: each
// is UNAUTHORIZED (HTTP 401), nothing is written, and a valid JWT works.
func TestJWTAttacks(t *testing.T) {
	s, c, trs := authServer(t)
	now := time.Now()
	claims := func(mut func(authtest.Claims)) authtest.Claims {
		cl := authtest.StandardClaims(c.Issuer, c.Audience, "acme-user", "acme", now, time.Hour)
		cl["permissions"] = []string{"*"}
		cl["org"], cl["team"], cl["project"] = "acme-org", "acme-team", "acme-project"
		if mut != nil {
			mut(cl)
		}
		return cl
	}
	stranger := authtest.NewECKey(t, "unknown-kid", elliptic.P256())
	impostor := authtest.NewECKey(t, c.Key.Kid, elliptic.P256())
	tests := []struct {
		name  string
		token string
	}{
		{name: "alg none", token: authtest.NoneToken(t, c.Key.Kid, claims(nil))},
		{name: "alg none without signature dot", token: authtest.NoneToken(t, c.Key.Kid, claims(nil))[:len(authtest.NoneToken(t, c.Key.Kid, claims(nil)))-1]},
		{name: "HMAC with the public key as secret", token: authtest.HS256Token(t, c.Key.PublicKeyPEM(t), c.Key.Kid, claims(nil))},
		{name: "wrong audience", token: c.Key.Sign(t, claims(func(cl authtest.Claims) { cl["aud"] = "another-service" }))},
		{name: "wrong issuer", token: c.Key.Sign(t, claims(func(cl authtest.Claims) { cl["iss"] = "https://evil.test.invalid/" }))},
		{name: "expired", token: c.ExpiredJWT},
		{name: "not valid before an hour from now", token: c.Key.Sign(t, claims(func(cl authtest.Claims) { cl["nbf"] = now.Add(time.Hour).Unix() }))},
		{name: "unknown kid", token: stranger.Sign(t, claims(nil))},
		{name: "known kid, another key", token: impostor.Sign(t, claims(nil))},
		{name: "claims tampered after signing", token: authtest.TamperClaims(t, c.JWT, claims(func(cl authtest.Claims) { cl["tenant"] = "globex" }))},
		{name: "no kid, another key", token: stranger.SignWithHeader(t, map[string]any{"kid": nil}, claims(nil))},
	}
	for _, tr := range trs {
		for _, tc := range tests {
			t.Run(tr+"/"+tc.name, func(t *testing.T) {
				before := countMemories(t, s, "acme")
				o := call(t, s, tr, tc.token, "add-memory", map[string]any{"content": "written by a forged token"}, nil)
				if o.Code != "UNAUTHORIZED" {
					t.Fatalf("code = %s (%s), want UNAUTHORIZED", o.Code, o.Message)
				}
				if tr != trGRPC && o.HTTPStatus != http.StatusUnauthorized {
					t.Errorf("HTTP status = %d, want 401", o.HTTPStatus)
				}
				if after := countMemories(t, s, "acme"); after != before {
					t.Errorf("memories %d → %d: a forged token wrote", before, after)
				}
			})
		}
		t.Run(tr+"/valid JWT", func(t *testing.T) {
			if o := call(t, s, tr, c.JWT, "search-memories", map[string]any{"query": "anything"}, nil); o.Code != "OK" {
				t.Fatalf("a valid JWT was refused: %+v", o)
			}
		})
	}
}

// TestTenantIsolation checks that another tenant's ids and audit events
// stay out of reach on every transport.
func TestTenantIsolation(t *testing.T) {
	s, c, trs := authServer(t)
	for _, tr := range trs {
		t.Run(tr+"/delete another tenant's memory", func(t *testing.T) {
			o := call(t, s, tr, c.Full, "add-memory", map[string]any{"content": "acme keeps its secrets in the vault"}, nil)
			if o.Code != "OK" {
				t.Fatalf("add-memory: %+v", o)
			}
			id := o.Result["data"].(map[string]any)["memoryId"].(string)
			if o := call(t, s, tr, c.OtherTenant, "delete-memory", map[string]any{"memoryId": id}, nil); o.Code != "NOT_FOUND" {
				t.Fatalf("globex deleting acme's memory: code = %s, want NOT_FOUND", o.Code)
			}
			if _, err := s.Store().GetMemory(context.Background(), "acme", id); err != nil {
				t.Fatalf("acme's memory is gone after globex's attempt: %v", err)
			}
			if o := call(t, s, tr, c.OtherTenant, "search-memories", map[string]any{"query": "acme secrets vault", "threshold": 0}, nil); o.Code != "OK" || resultCount(o) != 0 {
				t.Fatalf("globex searching acme's words: %s with %d results, want OK with none", o.Code, resultCount(o))
			}
		})
		t.Run(tr+"/audit events of another tenant", func(t *testing.T) {
			call(t, s, tr, c.Full, "search-memories", map[string]any{"query": "audited by acme"}, nil)
			waitFor(t, "acme's audit events", func() bool {
				return auditCount(t, s, tr, c.Full, "acme") > 0
			})
			if n := auditCount(t, s, tr, c.OtherTenant, "acme"); n != 0 {
				t.Fatalf("globex sees %d audit events of acme", n)
			}
		})
	}
}

// TestIdentityHeaderSpoofing checks that identity comes from credentials
// only: x-user-id needs act_for_users, x-org-id cannot replace the org a
// credential fixes, and a made-up x-tenant-id header changes nothing.
func TestIdentityHeaderSpoofing(t *testing.T) {
	s, c, trs := authServer(t)
	for _, tr := range trs {
		t.Run(tr+"/x-user-id without act_for_users", func(t *testing.T) {
			o := call(t, s, tr, c.Full, "add-memory", map[string]any{"content": "as another user"}, map[string]string{"x-user-id": "mallory"})
			if o.Code != "FORBIDDEN" {
				t.Fatalf("code = %s, want FORBIDDEN", o.Code)
			}
		})
		t.Run(tr+"/x-org-id and x-tenant-id cannot move a write", func(t *testing.T) {
			content := "spoofed org header test " + tr
			o := call(t, s, tr, c.Full, "add-memory", map[string]any{"content": content, "layer": "org"},
				map[string]string{"x-org-id": "globex-org", "x-tenant-id": "globex"})
			if o.Code != "OK" {
				t.Fatalf("add-memory: %+v", o)
			}
			id := o.Result["data"].(map[string]any)["memoryId"].(string)
			m, err := s.Store().GetMemory(context.Background(), "acme", id)
			if err != nil {
				t.Fatalf("the memory is not acme's: %v", err)
			}
			if m.Layer != store.Layer("org") || m.ScopeID != "acme-org" {
				t.Fatalf("stored in %s/%s, want org/acme-org (the credential's org)", m.Layer, m.ScopeID)
			}
		})
	}
}

// TestMCPSessionOfAnotherPrincipal checks that an MCP session opened by one
// principal is unknown to any other.
func TestMCPSessionOfAnotherPrincipal(t *testing.T) {
	s, c, trs := authServer(t)
	if len(trs) < 3 {
		t.Skip("the MCP endpoint is not mounted")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	owner, err := newMCPClient(ctx, s.HTTP, c.Full, nil)
	if err != nil {
		t.Fatal(err)
	}
	if owner.session == "" {
		t.Skip("the bridge runs stateless: there are no sessions to steal")
	}
	for _, tc := range []struct{ name, token string }{
		{name: "other tenant", token: c.OtherTenant},
		{name: "same tenant, other subject", token: c.ReadOnly},
		{name: "no token", token: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			thief := &mcpClient{url: owner.url, token: tc.token, session: owner.session, version: owner.version, headers: owner.headers}
			o, err := thief.callRaw(ctx, "search-memories", []byte(`{"query": "anything"}`))
			if err != nil {
				t.Fatal(err)
			}
			if o.HTTPStatus != http.StatusNotFound && o.HTTPStatus != http.StatusUnauthorized {
				t.Fatalf("a stolen session answered HTTP %d (%s %s), want 404 or 401", o.HTTPStatus, o.Code, o.Message)
			}
		})
	}
	if o, err := owner.callRaw(ctx, "search-memories", []byte(`{"query": "anything"}`)); err != nil || o.Code != "OK" {
		t.Fatalf("the owner lost its session: %v %+v", err, o)
	}
}

// resultCount is the number of data.results of a search.
func resultCount(o outcome) int {
	data, _ := o.Result["data"].(map[string]any)
	rs, _ := data["results"].([]any)
	return len(rs)
}

// auditCount counts the audit events of tenant that token can list.
func auditCount(t *testing.T, s *testserver.Server, tr, token, tenant string) int {
	t.Helper()
	o := call(t, s, tr, token, "list-audit-events", map[string]any{"page": map[string]any{"limit": 100}}, nil)
	if o.Code != "OK" {
		t.Fatalf("list-audit-events: %+v", o)
	}
	data, _ := o.Result["data"].(map[string]any)
	events, _ := data["events"].([]any)
	n := 0
	for _, e := range events {
		if m, ok := e.(map[string]any); ok && m["tenant"] == tenant {
			n++
		}
	}
	return n
}

// waitFor polls cond for up to 10 s: audit records are written
// asynchronously.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
