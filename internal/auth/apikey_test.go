package auth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/auth"
)

const (
	hashedKey = "tsk_live_9f2c1e0b7a6d4c3b2a1908f7e6d5c4b3"
	plainKey  = "dev-key-for-local-use-only-123456"
)

func newAPIKeyAuthenticator(tb testing.TB) *auth.Authenticator {
	tb.Helper()
	cfg := &auth.Config{APIKeys: []auth.APIKeyConfig{
		{
			KeySHA256:   strings.ToUpper(auth.HashKey(hashedKey)), // hex is case-insensitive
			Subject:     "svc-billing",
			Tenant:      "acme",
			Permissions: []string{"memory:read", "memory:write"},
			ActForUsers: true,
			Identifiers: map[string]string{auth.IdentifierOrgID: "acme", auth.IdentifierTeamID: "payments"},
		},
		{
			Key:         plainKey,
			Subject:     "dev",
			Tenant:      "local",
			Permissions: []string{"*"},
			ReadOnly:    true,
		},
	}}
	a, err := auth.New(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return a
}

func TestAuthenticateAPIKey(t *testing.T) {
	t.Parallel()
	a := newAPIKeyAuthenticator(t)
	if a.Development() {
		t.Fatal("Development() = true for an auth file")
	}
	tests := []struct {
		name        string
		header      string
		wantSubject string
		wantReason  auth.Reason
	}{
		{name: "valid hashed key", header: "Bearer " + hashedKey, wantSubject: "svc-billing"},
		{name: "valid plain key", header: "Bearer " + plainKey, wantSubject: "dev"},
		{name: "scheme is case-insensitive", header: "bearer " + hashedKey, wantSubject: "svc-billing"},
		{name: "unknown key", header: "Bearer tsk_live_unknown_0000000000000000", wantReason: auth.InvalidCredentials},
		{name: "key differing in last byte", header: "Bearer " + hashedKey[:len(hashedKey)-1] + "4", wantReason: auth.InvalidCredentials},
		{name: "hash of the key is not the key", header: "Bearer " + auth.HashKey(hashedKey), wantReason: auth.InvalidCredentials},
		{name: "empty header", header: "", wantReason: auth.MissingCredentials},
		{name: "blank header", header: "  \t ", wantReason: auth.MissingCredentials},
		{name: "scheme without token", header: "Bearer ", wantReason: auth.MissingCredentials},
		{name: "scheme alone", header: "Bearer", wantReason: auth.MalformedCredentials},
		{name: "no scheme", header: hashedKey, wantReason: auth.MalformedCredentials},
		{name: "basic scheme", header: "Basic " + hashedKey, wantReason: auth.MalformedCredentials},
		{name: "double space", header: "Bearer  " + hashedKey, wantReason: auth.MalformedCredentials},
		{name: "trailing space", header: "Bearer " + hashedKey + " ", wantReason: auth.MalformedCredentials},
		{name: "trailing newline", header: "Bearer " + hashedKey + "\n", wantReason: auth.MalformedCredentials},
		{name: "inner tab", header: "Bearer tsk_live\t9f2c", wantReason: auth.MalformedCredentials},
		{name: "non-ASCII", header: "Bearer clé-secrète-très-longue", wantReason: auth.MalformedCredentials},
		{name: "longest token is looked up", header: "Bearer " + strings.Repeat("k", auth.MaxTokenBytes), wantReason: auth.InvalidCredentials},
		{name: "over-long token", header: "Bearer " + strings.Repeat("k", auth.MaxTokenBytes+1), wantReason: auth.MalformedCredentials},
		{name: "huge header", header: "Bearer " + strings.Repeat("k", 1<<20), wantReason: auth.MalformedCredentials},
		{name: "JWT without jwt config", header: "Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", wantReason: auth.InvalidCredentials},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := a.Authenticate(context.Background(), tt.header)
			if tt.wantReason != 0 {
				if p != nil {
					t.Fatalf("got principal %+v, want error", p)
				}
				wantReason(t, err, tt.wantReason, strings.TrimPrefix(tt.header, "Bearer "))
				return
			}
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if p.Subject != tt.wantSubject || p.Method != auth.MethodAPIKey || !p.ExpiresAt.IsZero() || p.Anonymous {
				t.Fatalf("principal = %+v, want subject %q via api_key", p, tt.wantSubject)
			}
		})
	}
}

func TestAuthenticateAPIKeyPrincipal(t *testing.T) {
	t.Parallel()
	a := newAPIKeyAuthenticator(t)
	ctx := context.Background()
	p, err := a.Authenticate(ctx, "Bearer "+hashedKey)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tenant != "acme" || !p.ActForUsers || p.ReadOnly || p.Identifiers[auth.IdentifierTeamID] != "payments" {
		t.Fatalf("principal = %+v", p)
	}
	if !p.Allows("memory:write") || p.Allows("knowledge:read") {
		t.Fatalf("permissions = %q", p.Permissions)
	}
	// The returned principal is a copy: changing it changes nothing for
	// the next request.
	p.Permissions[0] = "*"
	p.Identifiers[auth.IdentifierOrgID] = "evil"
	again, err := a.Authenticate(ctx, "Bearer "+hashedKey)
	if err != nil {
		t.Fatal(err)
	}
	if again.Permissions[0] != "memory:read" || again.Identifiers[auth.IdentifierOrgID] != "acme" {
		t.Fatalf("mutation leaked into the next principal: %+v", again)
	}

	dev, err := a.Authenticate(ctx, "Bearer "+plainKey)
	if err != nil {
		t.Fatal(err)
	}
	if !dev.ReadOnly || dev.Tenant != "local" || dev.Identifiers != nil {
		t.Fatalf("plain-key principal = %+v", dev)
	}
}

func TestHashKey(t *testing.T) {
	t.Parallel()
	// sha256("abc") from FIPS 180-2.
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := auth.HashKey("abc"); got != want {
		t.Fatalf("HashKey(abc) = %s, want %s", got, want)
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	_, err := auth.New(context.Background(), &auth.Config{APIKeys: []auth.APIKeyConfig{{Key: "k", Subject: "s"}}})
	if err == nil || !strings.Contains(err.Error(), "api_keys[0]: tenant is required") {
		t.Fatalf("New error = %v, want the tenant problem", err)
	}
	if _, err := auth.New(context.Background(), nil); err == nil {
		t.Fatal("New(nil config) succeeded")
	}
}
