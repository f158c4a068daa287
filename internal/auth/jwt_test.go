package auth_test

import (
	"context"
	"crypto/elliptic"
	"encoding/base64"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
)

// with returns validClaims changed by edit; a nil value deletes the claim.
func with(edit authtest.Claims) authtest.Claims {
	c := validClaims()
	maps.Copy(c, edit)
	maps.DeleteFunc(c, func(_ string, v any) bool { return v == nil })
	return c
}

func TestAuthenticateJWT(t *testing.T) {
	t.Parallel()
	k := keys(t)
	a := newJWTAuthenticator(t, nil, k.rsa, k.ec, k.ed)
	ps256 := *k.rsa
	ps256.Alg = "PS256"
	otherWithSameKid := *k.rsa2
	otherWithSameKid.Kid = k.rsa.Kid
	jwkN := []byte(k.rsa.JWK(t)["n"].(string))

	tests := []struct {
		name       string
		token      func(t *testing.T) string
		wantReason auth.Reason
	}{
		{name: "RS256", token: func(t *testing.T) string { return k.rsa.Sign(t, validClaims()) }},
		{name: "PS256", token: func(t *testing.T) string { return ps256.Sign(t, validClaims()) }},
		{name: "ES256", token: func(t *testing.T) string { return k.ec.Sign(t, validClaims()) }},
		{name: "EdDSA", token: func(t *testing.T) string { return k.ed.Sign(t, validClaims()) }},
		{name: "audience array", token: func(t *testing.T) string {
			return k.ed.Sign(t, with(authtest.Claims{"aud": []any{"other", testAudience}}))
		}},
		{name: "alg none", wantReason: auth.DisallowedAlgorithm, token: func(t *testing.T) string {
			return authtest.NoneToken(t, k.rsa.Kid, validClaims())
		}},
		{name: "alg NONE", wantReason: auth.DisallowedAlgorithm, token: func(t *testing.T) string {
			return authtest.SignRaw(t, map[string]any{"alg": "NONE", "kid": k.rsa.Kid}, validClaims(), nil)
		}},
		{name: "HS256 signed with the RSA public key PEM", wantReason: auth.DisallowedAlgorithm, token: func(t *testing.T) string {
			return authtest.HS256Token(t, k.rsa.PublicKeyPEM(t), k.rsa.Kid, validClaims())
		}},
		{name: "HS256 signed with the JWK n bytes", wantReason: auth.DisallowedAlgorithm, token: func(t *testing.T) string {
			return authtest.HS256Token(t, k.rsa.RSAModulus(t), k.rsa.Kid, validClaims())
		}},
		{name: "HS256 signed with the JWK n text", wantReason: auth.DisallowedAlgorithm, token: func(t *testing.T) string {
			return authtest.HS256Token(t, jwkN, k.rsa.Kid, validClaims())
		}},
		{name: "ES512 not in the allowlist", wantReason: auth.DisallowedAlgorithm, token: func(t *testing.T) string {
			return authtest.NewECKey(t, k.ec.Kid, elliptic.P521()).Sign(t, validClaims())
		}},
		{name: "missing alg", wantReason: auth.DisallowedAlgorithm, token: func(t *testing.T) string {
			return authtest.SignRaw(t, map[string]any{"kid": k.ed.Kid}, validClaims(), nil)
		}},
		{name: "RSA kid with an EC algorithm", wantReason: auth.InvalidCredentials, token: func(t *testing.T) string {
			return k.ec.SignWithHeader(t, map[string]any{"kid": k.rsa.Kid}, validClaims())
		}},
		{name: "ES384 with a P-256 key", wantReason: auth.InvalidCredentials, token: func(t *testing.T) string {
			return authtest.NewECKey(t, k.ec.Kid, elliptic.P384()).SignWithHeader(t, nil, validClaims())
		}},
		{name: "wrong audience", wantReason: auth.WrongAudience, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"aud": "other-service"}))
		}},
		{name: "missing audience", wantReason: auth.WrongAudience, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"aud": nil}))
		}},
		{name: "wrong issuer", wantReason: auth.WrongIssuer, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"iss": "https://evil.example.com/"}))
		}},
		{name: "missing issuer", wantReason: auth.WrongIssuer, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"iss": nil}))
		}},
		{name: "expired", wantReason: auth.ExpiredCredentials, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"exp": testNow.Add(-time.Second).Unix()}))
		}},
		{name: "nbf in the future", wantReason: auth.NotYetValid, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"nbf": testNow.Add(time.Minute).Unix()}))
		}},
		{name: "iat in the future", wantReason: auth.NotYetValid, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"iat": testNow.Add(time.Minute).Unix()}))
		}},
		{name: "missing exp", wantReason: auth.InvalidCredentials, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"exp": nil}))
		}},
		{name: "exp is a string", wantReason: auth.MalformedCredentials, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"exp": "2099-01-01"}))
		}},
		{name: "unknown kid", wantReason: auth.InvalidCredentials, token: func(t *testing.T) string {
			return k.rsa.SignWithHeader(t, map[string]any{"kid": "rotated-away"}, validClaims())
		}},
		{name: "no kid with several keys", wantReason: auth.InvalidCredentials, token: func(t *testing.T) string {
			return k.rsa.SignWithHeader(t, map[string]any{"kid": nil}, validClaims())
		}},
		{name: "kid is not a string", wantReason: auth.InvalidCredentials, token: func(t *testing.T) string {
			return k.rsa.SignWithHeader(t, map[string]any{"kid": 1}, validClaims())
		}},
		{name: "tampered payload", wantReason: auth.InvalidCredentials, token: func(t *testing.T) string {
			return authtest.TamperClaims(t, k.rsa.Sign(t, validClaims()), with(authtest.Claims{"tenant": "victim"}))
		}},
		{name: "signed by another key with the same kid", wantReason: auth.InvalidCredentials, token: func(t *testing.T) string {
			return otherWithSameKid.Sign(t, validClaims())
		}},
		{name: "signature stripped", wantReason: auth.InvalidCredentials, token: func(t *testing.T) string {
			tok := k.rsa.Sign(t, validClaims())
			return tok[:strings.LastIndexByte(tok, '.')+1]
		}},
		{name: "critical header", wantReason: auth.MalformedCredentials, token: func(t *testing.T) string {
			return k.ed.SignWithHeader(t, map[string]any{"crit": []any{"b64"}, "b64": false}, validClaims())
		}},
		{name: "header is not JSON", wantReason: auth.MalformedCredentials, token: func(t *testing.T) string {
			tok := k.ed.Sign(t, validClaims())
			return base64.RawURLEncoding.EncodeToString([]byte("not json")) + tok[strings.IndexByte(tok, '.'):]
		}},
		{name: "payload is not JSON", wantReason: auth.MalformedCredentials, token: func(t *testing.T) string {
			tok := strings.Split(k.ed.Sign(t, validClaims()), ".")
			return tok[0] + "." + base64.RawURLEncoding.EncodeToString([]byte("[1,")) + "." + tok[2]
		}},
		{name: "missing tenant", wantReason: auth.MissingTenant, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"tenant": nil}))
		}},
		{name: "blank tenant", wantReason: auth.MissingTenant, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"tenant": " "}))
		}},
		{name: "tenant is not a string", wantReason: auth.InvalidCredentials, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"tenant": 7}))
		}},
		{name: "missing subject", wantReason: auth.InvalidCredentials, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"sub": nil}))
		}},
		{name: "permissions of the wrong type", wantReason: auth.InvalidCredentials, token: func(t *testing.T) string {
			return k.rsa.Sign(t, with(authtest.Claims{"permissions": map[string]any{"memory": "read"}}))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			token := tt.token(t)
			p, err := a.Authenticate(context.Background(), "Bearer "+token)
			if tt.wantReason != 0 {
				if p != nil {
					t.Fatalf("got principal %+v, want %v", p, tt.wantReason)
				}
				wantReason(t, err, tt.wantReason, token)
				return
			}
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if p.Subject != "user-42" || p.Tenant != "acme" || p.Method != auth.MethodJWT {
				t.Fatalf("principal = %+v", p)
			}
			if !p.ExpiresAt.Equal(testNow.Add(59 * time.Minute).Truncate(time.Second)) {
				t.Errorf("ExpiresAt = %v", p.ExpiresAt)
			}
			if !p.Allows("memory:read") || !p.Allows("knowledge:write") || p.Allows("memory:write") {
				t.Errorf("permissions = %q", p.Permissions)
			}
			if p.ReadOnly || p.ActForUsers || p.Anonymous {
				t.Errorf("unexpected flags: %+v", p)
			}
		})
	}
}

func TestAuthenticateJWTLeeway(t *testing.T) {
	t.Parallel()
	k := keys(t)
	a := newJWTAuthenticator(t, func(c *auth.JWTConfig) { c.Leeway = 30 * time.Second }, k.ed)
	tests := []struct {
		name       string
		claims     authtest.Claims
		wantReason auth.Reason
	}{
		{name: "expired within leeway", claims: with(authtest.Claims{"exp": testNow.Add(-20 * time.Second).Unix()})},
		{name: "expired beyond leeway", claims: with(authtest.Claims{"exp": testNow.Add(-40 * time.Second).Unix()}), wantReason: auth.ExpiredCredentials},
		{name: "nbf within leeway", claims: with(authtest.Claims{"nbf": testNow.Add(20 * time.Second).Unix()})},
		{name: "nbf beyond leeway", claims: with(authtest.Claims{"nbf": testNow.Add(40 * time.Second).Unix()}), wantReason: auth.NotYetValid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A single key in the set: a token without kid is accepted.
			token := k.ed.SignWithHeader(t, map[string]any{"kid": nil}, tt.claims)
			_, err := a.Authenticate(context.Background(), "Bearer "+token)
			if tt.wantReason == 0 {
				if err != nil {
					t.Fatalf("Authenticate: %v", err)
				}
				return
			}
			wantReason(t, err, tt.wantReason, token)
		})
	}
}

func TestAuthenticateJWTAlgorithmAllowlist(t *testing.T) {
	t.Parallel()
	k := keys(t)
	a := newJWTAuthenticator(t, func(c *auth.JWTConfig) { c.Algorithms = []string{"EdDSA"} }, k.rsa, k.ed)
	if _, err := a.Authenticate(context.Background(), "Bearer "+k.ed.Sign(t, validClaims())); err != nil {
		t.Fatalf("EdDSA token: %v", err)
	}
	token := k.rsa.Sign(t, validClaims())
	_, err := a.Authenticate(context.Background(), "Bearer "+token)
	wantReason(t, err, auth.DisallowedAlgorithm, token)
}

func TestAuthenticateJWTClaimMapping(t *testing.T) {
	t.Parallel()
	k := keys(t)
	tests := []struct {
		name        string
		edit        func(*auth.JWTConfig)
		claims      authtest.Claims
		wantSubject string
		wantTenant  string
		wantPerms   []string
		wantIDs     map[string]string
		wantReason  auth.Reason
	}{
		{
			name:        "scope string",
			edit:        func(c *auth.JWTConfig) { c.PermissionsClaim = "scope" },
			claims:      with(authtest.Claims{"scope": "memory:read  knowledge:read", "permissions": nil}),
			wantSubject: "user-42", wantTenant: "acme",
			wantPerms: []string{"memory:read", "knowledge:read"},
		},
		{
			name:        "permissions array",
			claims:      with(authtest.Claims{"permissions": []any{"memory:write"}}),
			wantSubject: "user-42", wantTenant: "acme",
			wantPerms: []string{"memory:write"},
		},
		{
			name:        "permissions as a string",
			claims:      with(authtest.Claims{"permissions": "a:b c:d"}),
			wantSubject: "user-42", wantTenant: "acme",
			wantPerms: []string{"a:b", "c:d"},
		},
		{
			name:        "no permissions claim",
			claims:      with(authtest.Claims{"permissions": nil}),
			wantSubject: "user-42", wantTenant: "acme",
		},
		{
			name:       "scope configured but array element not a string",
			edit:       func(c *auth.JWTConfig) { c.PermissionsClaim = "scope" },
			claims:     with(authtest.Claims{"scope": []any{"a:b", 3}}),
			wantReason: auth.InvalidCredentials,
		},
		{
			name: "custom subject, tenant and identifier claims",
			edit: func(c *auth.JWTConfig) {
				c.SubjectClaim = "client_id"
				c.TenantClaim = "https://toolsvc.example/tenant"
				c.IdentifiersClaims = map[string]string{
					auth.IdentifierOrgID: "org", auth.IdentifierTeamID: "team", auth.IdentifierUserID: "sub",
				}
			},
			claims: with(authtest.Claims{
				"client_id": "agent-7", "https://toolsvc.example/tenant": "globex", "org": "globex-org", "team": "",
			}),
			wantSubject: "agent-7", wantTenant: "globex",
			wantPerms: []string{"memory:read", "knowledge:*"},
			wantIDs:   map[string]string{auth.IdentifierOrgID: "globex-org", auth.IdentifierUserID: "user-42"},
		},
		{
			name:       "custom tenant claim missing",
			edit:       func(c *auth.JWTConfig) { c.TenantClaim = "org_tenant" },
			claims:     validClaims(),
			wantReason: auth.MissingTenant,
		},
		{
			name:       "identifier claim not a string",
			edit:       func(c *auth.JWTConfig) { c.IdentifiersClaims = map[string]string{auth.IdentifierOrgID: "org"} },
			claims:     with(authtest.Claims{"org": []any{"x"}}),
			wantReason: auth.InvalidCredentials,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := newJWTAuthenticator(t, tt.edit, k.ed)
			token := k.ed.Sign(t, tt.claims)
			p, err := a.Authenticate(context.Background(), "Bearer "+token)
			if tt.wantReason != 0 {
				wantReason(t, err, tt.wantReason, token)
				return
			}
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if p.Subject != tt.wantSubject || p.Tenant != tt.wantTenant {
				t.Errorf("subject, tenant = %q, %q; want %q, %q", p.Subject, p.Tenant, tt.wantSubject, tt.wantTenant)
			}
			if strings.Join(p.Permissions, ",") != strings.Join(tt.wantPerms, ",") {
				t.Errorf("permissions = %q, want %q", p.Permissions, tt.wantPerms)
			}
			if !maps.Equal(p.Identifiers, tt.wantIDs) {
				t.Errorf("identifiers = %v, want %v", p.Identifiers, tt.wantIDs)
			}
		})
	}
}

func TestNewRejectsBadJWKSFile(t *testing.T) {
	t.Parallel()
	k := keys(t)
	weak := authtest.NewRSAKey(t, "weak", 1024)
	tests := []struct {
		name    string
		path    string
		wantErr string
	}{
		{name: "RSA 1024-bit key", path: authtest.WriteJWKS(t, k.ed, weak), wantErr: "modulus of 1024 bits"},
		{name: "missing file", path: t.TempDir() + "/nope.json", wantErr: "jwks_file"},
		{name: "not JSON", path: authtest.WriteFile(t, "jwks.json", []byte("{keys")), wantErr: "jwks"},
		{name: "empty set", path: authtest.WriteFile(t, "jwks.json", []byte(`{"keys":[]}`)), wantErr: "no signature verification keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := &auth.Config{JWT: &auth.JWTConfig{Issuer: testIssuer, Audience: testAudience, JWKSFile: tt.path}}
			_, err := auth.New(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestAuthenticateMixed(t *testing.T) {
	t.Parallel()
	k := keys(t)
	cfg := &auth.Config{
		APIKeys: []auth.APIKeyConfig{{KeySHA256: auth.HashKey(hashedKey), Subject: "svc", Tenant: "acme"}},
		JWT:     &auth.JWTConfig{Issuer: testIssuer, Audience: testAudience, JWKSFile: authtest.WriteJWKS(t, k.ed)},
	}
	a, err := auth.New(context.Background(), cfg, auth.WithClock(testClock))
	if err != nil {
		t.Fatal(err)
	}
	for header, want := range map[string]string{
		"Bearer " + hashedKey:                   auth.MethodAPIKey,
		"Bearer " + k.ed.Sign(t, validClaims()): auth.MethodJWT,
	} {
		p, err := a.Authenticate(context.Background(), header)
		if err != nil || p.Method != want {
			t.Errorf("Authenticate = %+v, %v; want method %s", p, err, want)
		}
	}
}
