package auth_test

import (
	"context"
	"crypto/elliptic"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
)

const (
	testIssuer   = "https://idp.example.com/"
	testAudience = "toolsvc"
)

// testNow is the fixed time every JWT test runs at.
var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func testClock() time.Time { return testNow }

type testKeyring struct {
	rsa, rsa2, ec, ed *authtest.KeyPair
}

var (
	keyringOnce sync.Once
	keyring     testKeyring
)

// keys returns keys shared by all tests: RSA generation is slow under -race.
func keys(tb testing.TB) testKeyring {
	tb.Helper()
	keyringOnce.Do(func() {
		keyring = testKeyring{
			rsa:  authtest.NewRSAKey(tb, "rsa-1", 2048),
			rsa2: authtest.NewRSAKey(tb, "rsa-2", 2048),
			ec:   authtest.NewECKey(tb, "ec-1", elliptic.P256()),
			ed:   authtest.NewEd25519Key(tb, "ed-1"),
		}
	})
	return keyring
}

// newJWTAuthenticator builds an Authenticator trusting a JWKS file of jwks,
// with the JWT config adjusted by edit.
func newJWTAuthenticator(tb testing.TB, edit func(*auth.JWTConfig), jwks ...*authtest.KeyPair) *auth.Authenticator {
	tb.Helper()
	jc := &auth.JWTConfig{
		Issuer:   testIssuer,
		Audience: testAudience,
		JWKSFile: authtest.WriteJWKS(tb, jwks...),
	}
	if edit != nil {
		edit(jc)
	}
	a, err := auth.New(context.Background(), &auth.Config{JWT: jc}, auth.WithClock(testClock))
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return a
}

// validClaims returns claims that the default test config accepts.
func validClaims() authtest.Claims {
	c := authtest.StandardClaims(testIssuer, testAudience, "user-42", "acme", testNow.Add(-time.Minute), time.Hour)
	c["permissions"] = []any{"memory:read", "knowledge:*"}
	return c
}

// wantReason fails unless err is an *auth.Error with reason want whose text
// and detail do not echo secret.
func wantReason(tb testing.TB, err error, want auth.Reason, secret string) {
	tb.Helper()
	var ae *auth.Error
	if !errors.As(err, &ae) {
		tb.Fatalf("error = %v (%T), want *auth.Error with reason %v", err, err, want)
	}
	if ae.Reason != want {
		tb.Fatalf("reason = %v (detail %q), want %v", ae.Reason, ae.Detail, want)
	}
	if !errors.Is(err, &auth.Error{Reason: want}) {
		tb.Fatalf("errors.Is(err, &Error{Reason: %v}) = false", want)
	}
	if len(secret) >= 8 && (strings.Contains(ae.Error(), secret) || strings.Contains(ae.Detail, secret)) {
		tb.Fatalf("error %q / detail %q echoes the credentials", ae.Error(), ae.Detail)
	}
}
