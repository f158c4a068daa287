package auth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
)

// FuzzAuthenticate feeds arbitrary authorization headers to an authenticator
// with API keys and JWTs configured: nothing may panic, and since the fuzzer
// knows no valid credential, nothing may authenticate. The JWT key is
// derived from a fixed seed so that the signed seeds below mean the same
// thing in every fuzzing process.
func FuzzAuthenticate(f *testing.F) {
	key := authtest.NewEd25519KeyFromSeed(f, "fuzz", bytes.Repeat([]byte{7}, 32))
	cfg := &auth.Config{
		APIKeys: []auth.APIKeyConfig{{KeySHA256: auth.HashKey(rand.Text()), Subject: "s", Tenant: "t", Permissions: []string{"*"}}},
		JWT: &auth.JWTConfig{
			Issuer: testIssuer, Audience: testAudience, JWKSFile: authtest.WriteJWKS(f, key),
			PermissionsClaim: "scope",
		},
	}
	a, err := auth.New(context.Background(), cfg, auth.WithClock(testClock))
	if err != nil {
		f.Fatal(err)
	}
	for _, header := range []string{
		"",
		"Bearer ",
		"Bearer tsk_live_0123456789abcdef",
		"bearer a.b.c",
		"Basic dXNlcjpwYXNz",
		"Bearer " + key.Sign(f, with(authtest.Claims{"exp": testNow.Add(-time.Hour).Unix()})),
		"Bearer " + key.Sign(f, with(authtest.Claims{"aud": "someone-else"})),
		"Bearer " + key.Sign(f, with(authtest.Claims{"tenant": nil})),
		"Bearer " + authtest.NoneToken(f, "fuzz", validClaims()),
		"Bearer " + authtest.HS256Token(f, []byte(key.JWK(f)["x"].(string)), "fuzz", validClaims()),
		"Bearer " + strings.Repeat("A", auth.MaxTokenBytes+1),
	} {
		f.Add(header)
	}
	f.Fuzz(func(t *testing.T, header string) {
		p, err := a.Authenticate(context.Background(), header)
		if err == nil || p != nil {
			t.Fatalf("header %q authenticated as %+v", header, p)
		}
		var ae *auth.Error
		if !errors.As(err, &ae) {
			t.Fatalf("error %v is %T, want *auth.Error", err, err)
		}
		if ae.Reason < auth.MissingCredentials || ae.Reason > auth.MissingTenant {
			t.Fatalf("unknown reason %d", ae.Reason)
		}
		if token := strings.TrimPrefix(header, "Bearer "); len(token) >= 8 &&
			(strings.Contains(ae.Error(), token) || strings.Contains(ae.Detail, token)) {
			t.Fatalf("error %q / detail %q echoes the token", ae.Error(), ae.Detail)
		}
	})
}
