package authtest_test

import (
	"crypto/elliptic"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
)

func TestSignVerifies(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tests := []struct {
		name string
		key  *authtest.KeyPair
	}{
		{name: "RSA", key: authtest.NewRSAKey(t, "r", 2048)},
		{name: "P-256", key: authtest.NewECKey(t, "p256", elliptic.P256())},
		{name: "P-521", key: authtest.NewECKey(t, "p521", elliptic.P521())},
		{name: "Ed25519", key: authtest.NewEd25519Key(t, "e")},
		{name: "Ed25519 from seed", key: authtest.NewEd25519KeyFromSeed(t, "s", make([]byte, 32))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			token := tt.key.Sign(t, authtest.StandardClaims("iss", "aud", "sub", "ten", now, time.Minute))
			parsed, err := jwt.Parse(token, func(tok *jwt.Token) (any, error) {
				if tok.Header["kid"] != tt.key.Kid {
					t.Errorf("kid = %v, want %s", tok.Header["kid"], tt.key.Kid)
				}
				return tt.key.Public, nil
			}, jwt.WithValidMethods([]string{tt.key.Alg}))
			if err != nil || !parsed.Valid {
				t.Fatalf("parse: %v", err)
			}
			tampered := authtest.TamperClaims(t, token, authtest.Claims{"sub": "other"})
			if _, err := jwt.Parse(tampered, func(*jwt.Token) (any, error) { return tt.key.Public, nil }); err == nil {
				t.Fatal("tampered token verified")
			}
			if jwk := tt.key.JWK(t); jwk["kid"] != tt.key.Kid || jwk["use"] != "sig" || jwk["d"] != nil {
				t.Fatalf("JWK = %v", jwk)
			}
		})
	}
}

func TestBrokenTokens(t *testing.T) {
	t.Parallel()
	claims := authtest.Claims{"sub": "x"}
	none := authtest.NoneToken(t, "k", claims)
	if !strings.HasSuffix(none, ".") || strings.Count(none, ".") != 2 {
		t.Fatalf("none token %q lacks an empty signature", none)
	}
	secret := []byte("public-key-bytes")
	hs := authtest.HS256Token(t, secret, "k", claims)
	if _, err := jwt.Parse(hs, func(*jwt.Token) (any, error) { return secret, nil }); err != nil {
		t.Fatalf("HS256 token does not verify with its secret: %v", err)
	}
	k := authtest.NewRSAKey(t, "r", 2048)
	if pem := string(k.PublicKeyPEM(t)); !strings.HasPrefix(pem, "-----BEGIN PUBLIC KEY-----") {
		t.Fatalf("PublicKeyPEM = %q", pem)
	}
	if n := k.RSAModulus(t); len(n) != 256 {
		t.Fatalf("RSAModulus is %d bytes, want 256", len(n))
	}
}
