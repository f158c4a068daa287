package scope_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
)

func TestFromContext(t *testing.T) {
	tests := []struct {
		name    string
		facts   *callctx.Facts
		with    *scope.Caller
		tenant  string
		subject string
		code    toolerr.Code
	}{
		{name: "the chain's facts", facts: &callctx.Facts{Tenant: "acme", Subject: "key:ci"}, tenant: "acme", subject: "key:ci"},
		{name: "tenant from the identifiers", facts: &callctx.Facts{Identifiers: map[string]string{scope.KeyTenant: "beta"}}, tenant: "beta"},
		{name: "facts without a tenant", facts: &callctx.Facts{Subject: "key:ci"}, code: toolerr.Forbidden},
		{name: "no facts, no caller", code: toolerr.Forbidden},
		{name: "an in-process caller", with: &scope.Caller{Tenant: "bench"}, tenant: "bench"},
		{name: "the chain's facts win over WithCaller", facts: &callctx.Facts{Tenant: "acme"}, with: &scope.Caller{Tenant: "other"}, tenant: "acme"},
		{name: "a caller without a tenant", with: &scope.Caller{}, code: toolerr.Forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			if tt.with != nil {
				ctx = scope.WithCaller(ctx, *tt.with)
			}
			if tt.facts != nil {
				ctx = callctx.With(ctx, tt.facts)
			}
			c, err := scope.FromContext(ctx)
			if tt.code != "" {
				if e, ok := toolerr.As(err); !ok || e.Code != tt.code {
					t.Fatalf("err = %v, want %s", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Tenant != tt.tenant || c.IDs[scope.KeyTenant] != tt.tenant || c.IDs[scope.KeySubject] != tt.subject {
				t.Errorf("caller = %+v, want tenant %q subject %q", c, tt.tenant, tt.subject)
			}
		})
	}
}

func TestFromContextDoesNotAliasTheFacts(t *testing.T) {
	f := &callctx.Facts{Tenant: "acme", Identifiers: map[string]string{scope.KeyTeamID: "t1"}}
	c, err := scope.FromContext(callctx.With(t.Context(), f))
	if err != nil {
		t.Fatal(err)
	}
	c.IDs[scope.KeyTeamID] = "changed"
	if f.Identifiers[scope.KeyTeamID] != "t1" || f.Identifiers[scope.KeyTenant] != "" {
		t.Errorf("the caller's identifiers alias the facts: %v", f.Identifiers)
	}
}

func TestScopeID(t *testing.T) {
	user := scope.Caller{Tenant: "acme", IDs: map[string]string{
		scope.KeyTenant: "acme", scope.KeyUserID: "u1", scope.KeySubject: "key:app",
		scope.KeySessionID: "s1", scope.KeyAgentID: "a1", scope.KeyTeamID: "t1",
	}}
	service := scope.Caller{Tenant: "acme", IDs: map[string]string{scope.KeyTenant: "acme", scope.KeySubject: "key:ci", scope.KeySessionID: "s1"}}
	anonymous := scope.Caller{Tenant: "acme", IDs: map[string]string{scope.KeyTenant: "acme", scope.KeySessionID: "s1"}}
	tests := []struct {
		name   string
		caller scope.Caller
		layer  store.Layer
		id     string
		ok     bool
	}{
		{"company is the tenant", user, store.LayerCompany, "acme", true},
		{"team", user, store.LayerTeam, "t1", true},
		{"no project id", user, store.LayerProject, "", false},
		{"a session is bound to the user", user, store.LayerSession, "user:u1\x1fs1", true},
		{"an agent is bound to the user", user, store.LayerAgent, "user:u1\x1fa1", true},
		{"a session is bound to the subject without a user", service, store.LayerSession, "subject:key:ci\x1fs1", true},
		{"a session without an owner is no scope", anonymous, store.LayerSession, "", false},
		{"not a layer", user, store.Layer("galaxy"), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := tt.caller.ScopeID(tt.layer)
			if id != tt.id || ok != tt.ok {
				t.Errorf("ScopeID(%s) = %q, %v, want %q, %v", tt.layer, id, ok, tt.id, tt.ok)
			}
		})
	}
	// Two principals naming the same session read different scopes.
	a, _ := user.ScopeID(store.LayerSession)
	b, _ := service.ScopeID(store.LayerSession)
	if a == b {
		t.Errorf("two owners share the session scope %q", a)
	}
}

func TestMissingError(t *testing.T) {
	e := scope.MissingError("layer", store.LayerSession)
	if e.Code != toolerr.InvalidInput || len(e.Violations) != 1 || e.Violations[0].GetField() != "layer" {
		t.Fatalf("MissingError = %+v", e)
	}
	if e.Details["missingIdentifier"] != "session_id" || e.Details["layer"] != "session" {
		t.Errorf("details = %v", e.Details)
	}
	if want := `layer "session" needs a session id: send the x-session-id header`; scope.Missing(store.LayerSession) != want {
		t.Errorf("Missing = %q, want %q", scope.Missing(store.LayerSession), want)
	}
	if got := scope.Missing("galaxy"); got != `layer "galaxy" is not a memory layer` {
		t.Errorf("Missing(galaxy) = %q", got)
	}
}

func TestStoreError(t *testing.T) {
	if scope.StoreError(nil, "x", nil) != nil {
		t.Error("nil is an error")
	}
	nf := scope.StoreError(fmt.Errorf("get: %w", store.ErrNotFound), "no memory mem_1", map[string]any{"memoryId": "mem_1"})
	if e, ok := toolerr.As(nf); !ok || e.Code != toolerr.NotFound || e.Message != "no memory mem_1" || e.Details["memoryId"] != "mem_1" {
		t.Errorf("not found = %v", nf)
	}
	down := scope.StoreError(&store.UnavailableError{Op: "AddMemory", Err: errors.New("connection refused")}, "x", nil)
	if e, ok := toolerr.As(down); !ok || e.Code != toolerr.ProviderError || !e.Code.Retryable() {
		t.Errorf("unavailable = %v, want a retryable PROVIDER_ERROR", down)
	}
	other := errors.New("constraint violated")
	if got := scope.StoreError(other, "x", nil); !errors.Is(got, other) || got.Error() != other.Error() {
		t.Errorf("another error = %v, want it unchanged (the boundary hides it)", got)
	}
}
