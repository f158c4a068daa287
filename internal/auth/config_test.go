package auth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
)

// writeAuthFile writes content as auth.yaml in a fresh directory.
func writeAuthFile(tb testing.TB, content string) string {
	tb.Helper()
	return authtest.WriteFile(tb, "auth.yaml", []byte(content))
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	k := keys(t)
	path := writeAuthFile(t, `
api_keys:
  - key_sha256: "`+auth.HashKey(hashedKey)+`"
    subject: svc-billing
    tenant: acme
    permissions: ["memory:read", "memory:write", "knowledge:*"]
    act_for_users: true
    identifiers: {org_id: acme, team_id: payments}
  - key: "`+plainKey+`"
    subject: dev
    tenant: local
    permissions: ["*"]
    read_only: true
jwt:
  issuer: "`+testIssuer+`"
  audience: `+testAudience+`
  jwks_file: jwks.json
  permissions_claim: scope
  identifiers_claims: {user_id: sub}
  algorithms: [EdDSA]
  leeway: 30s
`)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "jwks.json"), authtest.JWKS(t, k.ed), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := auth.LoadFile(path)
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if len(cfg.APIKeys) != 2 || cfg.APIKeys[0].Identifiers["team_id"] != "payments" || !cfg.APIKeys[1].ReadOnly {
		t.Fatalf("api keys = %+v", cfg.APIKeys)
	}
	if cfg.JWT.Leeway != 30*time.Second || cfg.JWT.JWKSFile != filepath.Join(filepath.Dir(path), "jwks.json") {
		t.Fatalf("jwt = %+v", cfg.JWT)
	}
	warnings := cfg.Warnings()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "api_keys[1]") || !strings.Contains(warnings[0], "plain key") {
		t.Fatalf("Warnings = %q, want one about api_keys[1]'s plain key", warnings)
	}
	if strings.Contains(warnings[0], plainKey) {
		t.Fatal("warning echoes the plain key")
	}

	a, err := auth.New(context.Background(), cfg, auth.WithClock(testClock))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	claims := with(authtest.Claims{"scope": "memory:read"})
	p, err := a.Authenticate(context.Background(), "Bearer "+k.ed.Sign(t, claims))
	if err != nil {
		t.Fatalf("Authenticate JWT: %v", err)
	}
	if p.Identifiers[auth.IdentifierUserID] != "user-42" || !slices.Equal(p.Permissions, []string{"memory:read"}) {
		t.Fatalf("principal = %+v", p)
	}
}

func TestLoadFileErrors(t *testing.T) {
	t.Parallel()
	const good = `  - key_sha256: "` + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" + `"
    subject: s
    tenant: t
`
	tests := []struct {
		name    string
		content string
		want    []string // substrings of the error, each a problem
	}{
		{name: "empty file", content: "", want: []string{"file is empty"}},
		{name: "only a comment", content: "# nothing\n", want: []string{"file is empty"}},
		{name: "nothing configured", content: "api_keys: []\n", want: []string{"no api_keys, no jwt and no client_certs"}},
		{name: "syntax error", content: "api_keys: [\n", want: []string{"line"}},
		{name: "unknown top-level key", content: "api_keys:\n" + good + "apikeys: []\n", want: []string{`line 5: unknown key "apikeys"`}},
		{
			name:    "unknown key in an entry",
			content: "api_keys:\n" + good + "    tennant: x\n",
			want:    []string{`line 5: api_keys[0]: unknown key "tennant"`},
		},
		{
			name:    "unknown key in jwt",
			content: "jwt:\n  issuer: i\n  audience: a\n  jwks_file: j\n  jwks_uri: x\n",
			want:    []string{`line 5: jwt: unknown key "jwks_uri"`},
		},
		{
			name:    "duplicate yaml key",
			content: "api_keys:\n  - key_sha256: \"" + strings.Repeat("a", 64) + "\"\n    subject: s\n    tenant: t\n    subject: u\n",
			want:    []string{"line 5: api_keys[0].subject: duplicate key (first at line 3)"},
		},
		{
			name:    "missing tenant names line and entry",
			content: "api_keys:\n" + good + good + "  - key_sha256: \"" + strings.Repeat("b", 64) + "\"\n    subject: x\n",
			want:    []string{"line 8: api_keys[2]: tenant is required", "line 5: api_keys[1]: same key as api_keys[0]"},
		},
		{
			name:    "bad key_sha256",
			content: "api_keys:\n  - key_sha256: abc\n    subject: s\n    tenant: t\n",
			want:    []string{"line 2: api_keys[0]: key_sha256 must be 64 hex characters"},
		},
		{
			name:    "non-hex key_sha256",
			content: "api_keys:\n  - key_sha256: \"" + strings.Repeat("z", 64) + "\"\n    subject: s\n    tenant: t\n",
			want:    []string{"api_keys[0]: key_sha256 must be 64 hex characters"},
		},
		{
			name:    "key and key_sha256",
			content: "api_keys:\n  - key_sha256: \"" + strings.Repeat("a", 64) + "\"\n    key: k\n    subject: s\n    tenant: t\n",
			want:    []string{"line 3: api_keys[0]: key and key_sha256 are mutually exclusive"},
		},
		{
			name:    "no key",
			content: "api_keys:\n  - subject: s\n    tenant: t\n",
			want:    []string{"line 2: api_keys[0]: key_sha256 (or key, in development) is required"},
		},
		{
			name:    "plain key with a space",
			content: "api_keys:\n  - key: \"a b\"\n    subject: s\n    tenant: t\n",
			want:    []string{"api_keys[0]: key must be printable ASCII without spaces"},
		},
		{
			name:    "plain key shaped like a JWT",
			content: "api_keys:\n  - key: aaa.bbb.ccc\n    subject: s\n    tenant: t\n",
			want:    []string{"api_keys[0]: key must not have the shape of a JWT"},
		},
		{
			name:    "duplicate plain and hashed key",
			content: "api_keys:\n  - key: k1\n    subject: s\n    tenant: t\n  - key_sha256: \"" + auth.HashKey("k1") + "\"\n    subject: s\n    tenant: t\n",
			want:    []string{"line 5: api_keys[1]: same key as api_keys[0]"},
		},
		{
			name: "bad permissions",
			content: "api_keys:\n" + good + "    permissions:\n      - \"*:read\"\n      - memory\n      - \"memory:re ad\"\n      - memory:read\n" +
				"      - \":read\"\n",
			want: []string{
				`line 6: api_keys[0]: permissions[0] "*:read": a wildcard resource is not supported`,
				`line 7: api_keys[0]: permissions[1] "memory" is not a permission`,
				`line 8: api_keys[0]: permissions[2] "memory:re ad" is not a permission`,
				`line 10: api_keys[0]: permissions[4] ":read" is not a permission`,
			},
		},
		{
			name:    "unknown identifier",
			content: "api_keys:\n" + good + "    identifiers: {org_id: o, tenant_id: x}\n",
			want:    []string{`line 5: api_keys[0]: identifiers has unknown key "tenant_id"`},
		},
		{
			name:    "wrong type",
			content: "api_keys:\n" + good + "    read_only: maybe\n",
			want:    []string{"line 5: cannot unmarshal"},
		},
		{
			name:    "api_keys not a list",
			content: "api_keys: everything\n",
			want:    []string{"line 1: cannot unmarshal"},
		},
		{
			name:    "jwt missing issuer, audience and jwks",
			content: "jwt:\n  tenant_claim: t\n",
			want:    []string{"line 1: jwt: issuer is required", "jwt: audience is required", "jwt: jwks_file or jwks_url is required"},
		},
		{
			name:    "jwt both jwks sources",
			content: "jwt:\n  issuer: i\n  audience: a\n  jwks_file: j\n  jwks_url: https://idp.example.com/jwks\n",
			want:    []string{"line 4: jwt: jwks_file and jwks_url are mutually exclusive"},
		},
		{
			name:    "jwks_url over plain http to a remote host",
			content: "jwt:\n  issuer: i\n  audience: a\n  jwks_url: http://idp.example.com/jwks\n",
			want:    []string{"line 4: jwt: jwks_url must be https, or http on a loopback address"},
		},
		{
			name:    "jwks_url with credentials",
			content: "jwt:\n  issuer: i\n  audience: a\n  jwks_url: https://user:pw@idp.example.com/jwks\n",
			want:    []string{"jwt: jwks_url must not carry credentials"},
		},
		{
			name:    "symmetric and none algorithms",
			content: "jwt:\n  issuer: i\n  audience: a\n  jwks_file: j\n  algorithms: [RS256, HS256, none, XY999]\n",
			want: []string{
				`line 5: jwt: algorithms[1] "HS256" is never allowed`,
				`jwt: algorithms[2] "none" is never allowed`,
				`jwt: algorithms[3] "XY999" is not supported`,
			},
		},
		{
			name:    "leeway too large",
			content: "jwt:\n  issuer: i\n  audience: a\n  jwks_file: j\n  leeway: 10m\n",
			want:    []string{"line 5: jwt: leeway must be between 0s and 5m0s"},
		},
		{
			name:    "leeway without unit",
			content: "jwt:\n  issuer: i\n  audience: a\n  jwks_file: j\n  leeway: 30\n",
			want:    []string{"line 5: cannot unmarshal"},
		},
		{
			name:    "unknown identifiers claim",
			content: "jwt:\n  issuer: i\n  audience: a\n  jwks_file: j\n  identifiers_claims: {user: sub}\n",
			want:    []string{`line 5: jwt: identifiers_claims has unknown key "user"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeAuthFile(t, tt.content)
			cfg, err := auth.LoadFile(path)
			if err == nil {
				t.Fatalf("LoadFile succeeded with %+v", cfg)
			}
			var ce *auth.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is %T, want *auth.ConfigError", err, err)
			}
			if ce.Path != path {
				t.Errorf("Path = %q, want %q", ce.Path, path)
			}
			for _, w := range tt.want {
				if !slices.ContainsFunc(ce.Problems, func(p string) bool { return strings.Contains(p, w) }) {
					t.Errorf("no problem contains %q; problems:\n%s", w, strings.Join(ce.Problems, "\n"))
				}
			}
		})
	}
}

func TestLoadFileMissing(t *testing.T) {
	t.Parallel()
	if _, err := auth.LoadFile(filepath.Join(t.TempDir(), "absent.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadFile error = %v, want os.ErrNotExist", err)
	}
}

func TestValidateInCode(t *testing.T) {
	t.Parallel()
	cfg := &auth.Config{APIKeys: []auth.APIKeyConfig{{KeySHA256: "xyz", Tenant: "t"}}}
	err := cfg.Validate()
	var ce *auth.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Validate = %v, want *ConfigError", err)
	}
	want := []string{"api_keys[0]: key_sha256 must be 64 hex characters", "api_keys[0]: subject is required"}
	if !slices.Equal(ce.Problems, want) {
		t.Fatalf("Problems = %q, want %q", ce.Problems, want)
	}
}

func TestLintPermissions(t *testing.T) {
	t.Parallel()
	tools := map[string][]string{"memory": {"read", "write"}, "knowledge": {"read"}}
	known := func(resource, action string) bool {
		actions, ok := tools[resource]
		return ok && (action == "*" || slices.Contains(actions, action))
	}
	cfg := &auth.Config{APIKeys: []auth.APIKeyConfig{
		{Key: "a", Subject: "ok", Tenant: "t", Permissions: []string{"memory:read", "knowledge:*", "*"}},
		{Key: "b", Subject: "typos", Tenant: "t", Permissions: []string{"memroy:read", "memory:delete", "cards:*", "knowledge:read"}},
	}}
	got := cfg.LintPermissions(known)
	want := []string{
		`api_keys[1] (subject "typos"): permission "memroy:read" matches no tool permission`,
		`api_keys[1] (subject "typos"): permission "memory:delete" matches no tool permission`,
		`api_keys[1] (subject "typos"): permission "cards:*" matches no tool permission`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("LintPermissions =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := cfg.LintPermissions(nil); got != nil {
		t.Fatalf("LintPermissions(nil) = %q, want nil", got)
	}
}
