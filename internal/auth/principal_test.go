package auth_test

import (
	"context"
	"testing"

	"github.com/toolsvc/toolsvc/internal/auth"
)

func TestPrincipalAllows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		grants     []string
		permission string
		want       bool
	}{
		{name: "exact match", grants: []string{"memory:read"}, permission: "memory:read", want: true},
		{name: "other action", grants: []string{"memory:read"}, permission: "memory:write", want: false},
		{name: "other resource", grants: []string{"memory:read"}, permission: "knowledge:read", want: false},
		{name: "resource wildcard", grants: []string{"memory:*"}, permission: "memory:delete", want: true},
		{name: "resource wildcard other resource", grants: []string{"memory:*"}, permission: "memoryx:read", want: false},
		{name: "resource wildcard prefix only", grants: []string{"mem:*"}, permission: "memory:read", want: false},
		{name: "resource wildcard needs action", grants: []string{"memory:*"}, permission: "memory:", want: false},
		{name: "global wildcard", grants: []string{"*"}, permission: "anything:goes", want: true},
		{name: "action wildcard is literal", grants: []string{"*:read"}, permission: "memory:read", want: false},
		{name: "second grant matches", grants: []string{"a:b", "memory:read"}, permission: "memory:read", want: true},
		{name: "no grants", grants: nil, permission: "memory:read", want: false},
		{name: "empty permission", grants: []string{"*"}, permission: "", want: false},
		{name: "case sensitive", grants: []string{"Memory:read"}, permission: "memory:read", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &auth.Principal{Permissions: tt.grants}
			if got := p.Allows(tt.permission); got != tt.want {
				t.Errorf("Allows(%q) with %q = %v, want %v", tt.permission, tt.grants, got, tt.want)
			}
		})
	}
}

func TestPrincipalAllowsNil(t *testing.T) {
	t.Parallel()
	var p *auth.Principal
	if p.Allows("memory:read") {
		t.Error("nil principal allowed a permission")
	}
}

func TestDevelopment(t *testing.T) {
	t.Parallel()
	a := auth.NewDevelopment()
	if !a.Development() {
		t.Fatal("Development() = false for NewDevelopment")
	}
	for _, header := range []string{"", "Bearer whatever", "garbage"} {
		p, err := a.Authenticate(context.Background(), header)
		if err != nil {
			t.Fatalf("Authenticate(%q): %v", header, err)
		}
		if p.Subject != "anonymous" || p.Tenant != "default" || !p.Anonymous || p.Method != auth.MethodAnonymous {
			t.Fatalf("principal = %+v, want the anonymous development principal", p)
		}
		for _, id := range []string{auth.IdentifierOrgID, auth.IdentifierTeamID, auth.IdentifierProjectID, auth.IdentifierUserID} {
			if p.Identifiers[id] != "dev" {
				t.Errorf("Identifiers[%s] = %q, want dev", id, p.Identifiers[id])
			}
		}
		if !p.Allows("memory:write") {
			t.Error("development principal denied memory:write")
		}
		// Callers own the returned principal: changing it must not leak
		// into the next request.
		p.Permissions[0] = "none:none"
		p.Identifiers[auth.IdentifierOrgID] = "changed"
	}
}
