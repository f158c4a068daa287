package testserver

import (
	"crypto/elliptic"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
)

// Credentials are the principals of an auth file written for tests, as
// bearer tokens. Every tenant-scoped principal has org, team, project and
// user identifiers so that every memory layer but session is usable.
type Credentials struct {
	// AuthFile is the path of the written auth file.
	AuthFile string
	// Full is an API key of tenant acme with every permission.
	Full string
	// ReadOnly is an API key of tenant acme, every permission, read-only.
	ReadOnly string
	// NoPermission is an API key of tenant acme holding no tool permission.
	NoPermission string
	// OtherTenant is an API key of tenant globex with every permission.
	OtherTenant string
	// Peer is another API key of tenant acme with every permission: its
	// own subject, bound to no user (so it acts as itself).
	Peer string
	// JWT is a valid JWT of tenant acme with every permission.
	JWT string
	// ExpiredJWT is a JWT of tenant acme that expired an hour ago.
	ExpiredJWT string
	// Bad is a credential no one issued.
	Bad string
	// Issuer and Audience of the JWTs; Key signs them.
	Issuer, Audience string
	Key              *authtest.KeyPair
}

// WriteCredentials writes an auth file with API keys (stored hashed) and a
// JWT issuer backed by a JWKS file, in t.TempDir().
func WriteCredentials(t testing.TB) *Credentials {
	t.Helper()
	dir := t.TempDir()
	key := authtest.NewECKey(t, "test-key-1", elliptic.P256())
	jwks := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwks, authtest.JWKS(t, key), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Credentials{
		Full: "tsk_full_0123456789abcdef", ReadOnly: "tsk_readonly_0123456789abcdef",
		NoPermission: "tsk_noperm_0123456789abcdef", OtherTenant: "tsk_globex_0123456789abcdef", Peer: "tsk_peer_0123456789abcdef",
		Bad: "tsk_unknown_0123456789abcdef", Issuer: "https://idp.test.invalid/", Audience: "toolsvc", Key: key,
	}
	ids := func(tenant string) string {
		return fmt.Sprintf("{org_id: %q, team_id: %q, project_id: %q, user_id: %q}", tenant+"-org", tenant+"-team", tenant+"-project", tenant+"-user")
	}
	body := fmt.Sprintf(`api_keys:
  - key_sha256: %q
    subject: full
    tenant: acme
    permissions: ["*"]
    identifiers: %s
  - key_sha256: %q
    subject: readonly
    tenant: acme
    permissions: ["*"]
    read_only: true
    identifiers: %s
  - key_sha256: %q
    subject: noperm
    tenant: acme
    permissions: ["nothing:read"]
    identifiers: %s
  - key_sha256: %q
    subject: globex
    tenant: globex
    permissions: ["*"]
    identifiers: %s
  - key_sha256: %q
    subject: peer
    tenant: acme
    permissions: ["*"]
    identifiers: {org_id: "acme-org", team_id: "acme-team", project_id: "acme-project"}
jwt:
  issuer: %q
  audience: %q
  jwks_file: %q
  tenant_claim: tenant
  permissions_claim: permissions
  identifiers_claims: {org_id: org, team_id: team, project_id: project, user_id: sub}
`, auth.HashKey(c.Full), ids("acme"), auth.HashKey(c.ReadOnly), ids("acme"), auth.HashKey(c.NoPermission), ids("acme"),
		auth.HashKey(c.OtherTenant), ids("globex"), auth.HashKey(c.Peer), c.Issuer, c.Audience, jwks)
	c.AuthFile = filepath.Join(dir, "auth.yaml")
	if err := os.WriteFile(c.AuthFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claims := func(issued time.Time) authtest.Claims {
		cl := authtest.StandardClaims(c.Issuer, c.Audience, "acme-user", "acme", issued, time.Hour)
		cl["permissions"] = []string{"*"}
		cl["org"], cl["team"], cl["project"] = "acme-org", "acme-team", "acme-project"
		return cl
	}
	c.JWT = key.Sign(t, claims(now))
	c.ExpiredJWT = key.Sign(t, claims(now.Add(-2*time.Hour)))
	return c
}
