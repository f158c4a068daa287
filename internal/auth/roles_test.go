package auth_test

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
)

const governanceFile = `
tool_sets:
  - name: memory
    include:
      - tag: memory
    exclude:
      - tool: delete-*
  - name: v1-queries
    include:
      - category: query
        version: "1.x"
roles:
  - name: reader
    permissions: ["memory:read"]
  - name: writer
    permissions: ["memory:read", "memory:write"]
    tool_sets: [memory]
api_keys:
  - key: "` + plainKey + `"
    subject: dev
    tenant: acme
    permissions: ["sync:read"]
    roles: [reader, writer]
client_certs:
  - subject_dn: CN=billing,O=Example
    subject: billing
    tenant: acme
    roles: [reader]
    tool_sets: [v1-queries]
`

// TestRolesCombineWithDirectPermissions: an API key's and a client
// certificate's roles add their grants to the entry's own and bind it to
// their sets; the principal names the roles it holds.
func TestRolesCombineWithDirectPermissions(t *testing.T) {
	t.Parallel()
	cfg, err := auth.LoadFile(writeAuthFile(t, governanceFile))
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Authenticate(context.Background(), "Bearer "+plainKey)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Allows("sync:read") || !p.Allows("memory:write") || p.Allows("memory:delete") ||
		!slices.Equal(p.Roles, []string{"reader", "writer"}) || !slices.Equal(p.ToolSets, []string{"memory"}) {
		t.Fatalf("key principal = %+v", p)
	}
	for _, tc := range []struct {
		tool auth.ToolFacts
		in   bool
	}{
		{auth.ToolFacts{Name: "add-memory", Version: "1.0.0", Category: "mutation", Tags: []string{"memory", "write"}}, true},
		{auth.ToolFacts{Name: "delete-memory", Version: "1.0.0", Category: "mutation", Tags: []string{"memory"}}, false},
		{auth.ToolFacts{Name: "get-sync-status", Version: "1.0.0", Category: "query", Tags: []string{"sync"}}, false},
	} {
		if got := p.View.Contains(tc.tool); got != tc.in {
			t.Errorf("key's view holds %s: %v, want %v", tc.tool.Name, got, tc.in)
		}
	}
	// Choosing a set the key is not bound to is refused; its own is not.
	var se *auth.ToolSetError
	if err := a.SelectToolSet(p, "v1-queries"); !errors.As(err, &se) || se.Rule != "tool set not bound to the credential" {
		t.Errorf("select an unbound set: %v", err)
	}
	if err := a.SelectToolSet(p, "nope"); !errors.As(err, &se) || se.Rule != "unknown tool set" {
		t.Errorf("select an unknown set: %v", err)
	}
	if err := a.SelectToolSet(p, "memory"); err != nil || p.View.Selected != "memory" {
		t.Errorf("select the bound set: %v", err)
	}

	leaf := authtest.NewCA(t, "clients").Issue(t, authtest.CertSpec{Client: true, Subject: pkix.Name{CommonName: "billing", Organization: []string{"Example"}}}).Leaf
	c, err := a.AuthenticatePeer(context.Background(), "", verified(leaf))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Allows("memory:read") || c.Allows("memory:write") || !slices.Equal(c.Roles, []string{"reader"}) ||
		!c.View.Contains(auth.ToolFacts{Name: "search-memories", Version: "1.1.0", Category: "query"}) ||
		c.View.Contains(auth.ToolFacts{Name: "search-memories", Version: "2.0.0", Category: "query"}) {
		t.Fatalf("certificate principal = %+v", c)
	}
}

// TestRolesFromJWTClaim: roles_claim grants the roles the file defines
// (an array or a space-separated string), ignores the others, and a claim
// of the wrong type is refused.
func TestRolesFromJWTClaim(t *testing.T) {
	t.Parallel()
	k := keys(t)
	cfg := &auth.Config{
		JWT:      &auth.JWTConfig{Issuer: testIssuer, Audience: testAudience, JWKSFile: authtest.WriteJWKS(t, k.rsa), RolesClaim: "groups"},
		Roles:    []auth.RoleConfig{{Name: "writer", Permissions: []string{"memory:write"}, ToolSets: []string{"memory"}}},
		ToolSets: []auth.ToolSetConfig{{Name: "memory", Include: []auth.ToolSelector{{Tag: "memory"}}}},
	}
	a, err := auth.New(context.Background(), cfg, auth.WithClock(testClock))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		claim any
		roles []string
	}{
		{"array", []any{"writer", "other-service-admin"}, []string{"writer"}},
		{"string", "other writer", []string{"writer"}},
		{"none", nil, nil},
	} {
		claims := validClaims()
		if tc.claim != nil {
			claims["groups"] = tc.claim
		}
		p, err := a.Authenticate(context.Background(), "Bearer "+k.rsa.Sign(t, claims))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(p.Roles, tc.roles) || p.Allows("memory:write") != (tc.roles != nil) || (p.View != nil) != (tc.roles != nil) {
			t.Errorf("%s: principal %+v", tc.name, p)
		}
	}
	claims := validClaims()
	claims["groups"] = 42
	_, err = a.Authenticate(context.Background(), "Bearer "+k.rsa.Sign(t, claims))
	wantReason(t, err, auth.InvalidCredentials, "")
}

// TestRolesAndSetsConfigErrors: every mistake in roles, tool sets and
// their grants is reported with its line and entry.
func TestRolesAndSetsConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, want string }{
		{"role grants nothing", "roles:\n  - name: empty\napi_keys:\n  - key: \"" + plainKey + "\"\n    subject: a\n    tenant: t\n",
			"line 2: roles[0]: permissions is empty: the role grants nothing"},
		{"duplicate role", "roles:\n  - name: r\n    permissions: [\"*\"]\n  - name: r\n    permissions: [\"*\"]\napi_keys:\n  - key: \"" + plainKey + "\"\n    subject: a\n    tenant: t\n",
			`line 4: roles[1]: name "r" is defined twice`},
		{"bad role name", "roles:\n  - name: Bad Name\n    permissions: [\"*\"]\napi_keys:\n  - key: \"" + plainKey + "\"\n    subject: a\n    tenant: t\n",
			"line 2: roles[0]: name must be 1 to 64"},
		{"unknown role", "api_keys:\n  - key: \"" + plainKey + "\"\n    subject: a\n    tenant: t\n    roles: [ghost]\n",
			`line 5: api_keys[0]: roles[0] "ghost" is not a role of this file (defined: none)`},
		{"role binds an unknown set", "roles:\n  - name: r\n    permissions: [\"*\"]\n    tool_sets: [ghost]\napi_keys:\n  - key: \"" + plainKey + "\"\n    subject: a\n    tenant: t\n",
			`line 4: roles[0]: tool_sets[0] "ghost" is not a tool set of this file`},
		{"empty set", "tool_sets:\n  - name: s\napi_keys:\n  - key: \"" + plainKey + "\"\n    subject: a\n    tenant: t\n",
			"line 2: tool_sets[0]: include is empty"},
		{"empty selector", "tool_sets:\n  - name: s\n    include:\n      - {}\napi_keys:\n  - key: \"" + plainKey + "\"\n    subject: a\n    tenant: t\n",
			"line 4: tool_sets[0]: include[0] selects nothing"},
		{"bad version pattern", "tool_sets:\n  - name: s\n    include:\n      - version: \"x.1\"\napi_keys:\n  - key: \"" + plainKey + "\"\n    subject: a\n    tenant: t\n",
			`tool_sets[0]: include[0] "x.1" is not a version pattern`},
		{"unknown selector key", "tool_sets:\n  - name: s\n    include:\n      - tags: memory\napi_keys:\n  - key: \"" + plainKey + "\"\n    subject: a\n    tenant: t\n",
			`line 4: tool_sets[0].include[0]: unknown key "tags"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := auth.LoadFile(writeAuthFile(t, tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadFile: %v, want %q", err, tc.want)
			}
		})
	}
}
