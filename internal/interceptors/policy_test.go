package interceptors_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

var policyNow = time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)

func runPolicy(t *testing.T, c *interceptors.Call) (*fakeNext, error) {
	t.Helper()
	next := &fakeNext{}
	_, err := runStep(context.Background(), interceptors.PolicyStep(func() time.Time { return policyNow }), c, c.Request, next)
	if err != nil && next.count() != 0 {
		t.Errorf("policy refused (%v) but the handler ran", err)
	}
	return next, err
}

func TestPolicyAllowsAPermittedCaller(t *testing.T) {
	c := &interceptors.Call{Tool: memTool(t, searchMethod, nil), Principal: fullPrincipal()}
	next, err := runPolicy(t, c)
	if err != nil || next.count() != 1 {
		t.Fatalf("err %v, handler ran %d times; want allowed once", err, next.count())
	}
	if c.Decision != "allow" || c.Reason != "policy passed" {
		t.Errorf("decision %q/%q, want allow/policy passed", c.Decision, c.Reason)
	}
}

func TestPolicyHidesToolsWithoutPermission(t *testing.T) {
	for name, p := range map[string]*auth.Principal{
		"other permission": {Subject: "bob", Tenant: "acme", Permissions: []string{"knowledge:read"}},
		"no principal":     nil,
	} {
		t.Run(name, func(t *testing.T) {
			tool := memTool(t, searchMethod, nil)
			c := &interceptors.Call{Tool: tool, Principal: p}
			_, err := runPolicy(t, c)
			e := wantCode(t, err, toolerr.NotFound)
			// Exactly the answer of a tool that does not exist.
			if want := toolerr.UnknownTool(tool.Name); e.Message != want.Message {
				t.Errorf("message %q, want the unknown tool's %q", e.Message, want.Message)
			}
			if c.Decision != "deny" || c.Reason != "permission: missing memory:read" {
				t.Errorf("decision %q/%q, want deny/permission: missing memory:read", c.Decision, c.Reason)
			}
		})
	}
}

func TestPolicyNeedsATenantForTenantScopedTools(t *testing.T) {
	p := fullPrincipal()
	p.Tenant = ""
	c := &interceptors.Call{Tool: memTool(t, searchMethod, func(tl *registry.Tool) { tl.TenantScoped = true }), Principal: p}
	_, err := runPolicy(t, c)
	wantCode(t, err, toolerr.Forbidden)
	if c.Reason != "tenant: the credential carries no tenant" {
		t.Errorf("reason %q, want no tenant", c.Reason)
	}

	// A tool that is not tenant scoped does not need one.
	c = &interceptors.Call{Tool: memTool(t, searchMethod, func(tl *registry.Tool) { tl.TenantScoped = false }), Principal: p}
	if _, err := runPolicy(t, c); err != nil {
		t.Fatalf("tenantless call of an unscoped tool: %v", err)
	}
}

func TestPolicyKeepsReadOnlyPrincipalsFromMutations(t *testing.T) {
	ro := fullPrincipal()
	ro.ReadOnly = true
	c := &interceptors.Call{Tool: memTool(t, addMethod, nil), Principal: ro}
	_, err := runPolicy(t, c)
	wantCode(t, err, toolerr.Forbidden)
	if c.Decision != "deny" || c.Reason != "read_only: read-only principal and a tool that changes state" {
		t.Errorf("decision %q/%q, want deny/read_only", c.Decision, c.Reason)
	}

	// Destructive without side_effect is a mutation too.
	c = &interceptors.Call{Tool: memTool(t, searchMethod, func(tl *registry.Tool) { tl.Spec.Destructive = true }), Principal: ro}
	_, err = runPolicy(t, c)
	wantCode(t, err, toolerr.Forbidden)

	// Queries are fine.
	c = &interceptors.Call{Tool: memTool(t, searchMethod, nil), Principal: ro}
	if _, err := runPolicy(t, c); err != nil {
		t.Fatalf("read-only query: %v", err)
	}
}

func TestPolicyRemovedToolNamesItsReplacement(t *testing.T) {
	deprecate := func(removal time.Time) func(*registry.Tool) {
		return func(tl *registry.Tool) {
			tl.Spec.Deprecated = &toolsvcv1.Deprecation{Since: "2029-01-01", RemovalDate: removal.Format(time.DateOnly), Replacement: "search-memories-v2"}
			tl.RemovalDate = removal
		}
	}
	c := &interceptors.Call{Tool: memTool(t, searchMethod, deprecate(policyNow)), Principal: fullPrincipal()}
	_, err := runPolicy(t, c)
	e := wantCode(t, err, toolerr.NotFound)
	if e.Details["replacement"] != "search-memories-v2" || e.Details["removalDate"] != "2030-06-01" {
		t.Errorf("details %v, want replacement and removalDate", e.Details)
	}
	if !strings.HasPrefix(c.Reason, "removed: removed on ") {
		t.Errorf("reason %q, want removed", c.Reason)
	}

	// Deprecated but not yet removed: still served.
	c = &interceptors.Call{Tool: memTool(t, searchMethod, deprecate(policyNow.Add(24*time.Hour))), Principal: fullPrincipal()}
	if _, err := runPolicy(t, c); err != nil {
		t.Fatalf("deprecated tool before its removal date: %v", err)
	}
}

func TestPolicyReturnsResolvesPendingErrorOnlyAfterPermissions(t *testing.T) {
	pending := toolerr.New(toolerr.InvalidInput, "bad arguments")

	// A known tool with undecodable arguments: the caller may see it, so
	// it learns what was wrong; the decision is left to later steps.
	c := &interceptors.Call{Tool: memTool(t, searchMethod, nil), Principal: fullPrincipal()}
	interceptors.SetPending(c, pending)
	_, err := runPolicy(t, c)
	if !errors.Is(err, pending) {
		t.Fatalf("err %v, want the pending error", err)
	}

	// A caller that may not see the tool gets NOT_FOUND, not the pending error.
	c = &interceptors.Call{Tool: memTool(t, searchMethod, nil), Principal: &auth.Principal{Subject: "x", Tenant: "acme"}}
	interceptors.SetPending(c, pending)
	_, err = runPolicy(t, c)
	wantCode(t, err, toolerr.NotFound)

	// No tool at all: denied as unknown.
	c = &interceptors.Call{Principal: fullPrincipal()}
	interceptors.SetPending(c, toolerr.UnknownTool("nope"))
	_, err = runPolicy(t, c)
	wantCode(t, err, toolerr.NotFound)
	if c.Decision != "deny" || c.Reason != "unknown_tool: no such tool" {
		t.Errorf("decision %q/%q, want deny/unknown tool", c.Decision, c.Reason)
	}
}

func TestPolicyPassesCallsThatAreNotTools(t *testing.T) {
	c := &interceptors.Call{FullMethod: "/toolsvc.v1.ToolService/ListTools", Principal: fullPrincipal()}
	next, err := runPolicy(t, c)
	if err != nil || next.count() != 1 {
		t.Fatalf("err %v, handler ran %d times", err, next.count())
	}
	if c.Decision != "" {
		t.Errorf("decision %q for a call that is not a tool", c.Decision)
	}
}
