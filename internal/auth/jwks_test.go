package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/loopback"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
)

func TestParseJWKS(t *testing.T) {
	t.Parallel()
	rsaKey := authtest.NewRSAKey(t, "rsa", 2048)
	ecKey := authtest.NewECKey(t, "ec", elliptic.P384())
	edKey := authtest.NewEd25519Key(t, "ed")
	b64 := base64.RawURLEncoding.EncodeToString
	// jwk returns the JWK of k with members changed by edit (nil deletes).
	jwk := func(k *authtest.KeyPair, edit map[string]any) map[string]any {
		m := k.JWK(t)
		for name, v := range edit {
			if v == nil {
				delete(m, name)
			} else {
				m[name] = v
			}
		}
		return m
	}
	set := func(keys ...map[string]any) string {
		data, err := json.Marshal(map[string]any{"keys": keys})
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	ecX := ecKey.JWK(t)["x"].(string)

	tests := []struct {
		name     string
		jwks     string
		wantKids []string
		wantErr  string
	}{
		{name: "RSA, EC and OKP", jwks: set(jwk(rsaKey, nil), jwk(ecKey, nil), jwk(edKey, nil)), wantKids: []string{"rsa", "ec", "ed"}},
		{name: "encryption keys skipped", jwks: set(jwk(rsaKey, map[string]any{"use": "enc", "kid": "enc"}), jwk(edKey, nil)), wantKids: []string{"ed"}},
		{name: "matching alg member", jwks: set(jwk(ecKey, map[string]any{"alg": "ES384"})), wantKids: []string{"ec"}},
		{name: "verify in key_ops", jwks: set(jwk(edKey, map[string]any{"key_ops": []string{"verify"}})), wantKids: []string{"ed"}},
		{name: "not JSON", jwks: "{", wantErr: "jwks"},
		{name: "trailing data", jwks: set(jwk(edKey, nil)) + "{}", wantErr: "trailing data"},
		{name: "only encryption keys", jwks: set(jwk(rsaKey, map[string]any{"use": "enc"})), wantErr: "no signature verification keys"},
		{name: "private RSA member", jwks: set(jwk(rsaKey, map[string]any{"d": "AQAB"})), wantErr: "private or symmetric key material"},
		{name: "symmetric key", jwks: set(map[string]any{"kty": "oct", "kid": "h", "k": "c2VjcmV0"}), wantErr: "private or symmetric"},
		{name: "oct without k", jwks: set(map[string]any{"kty": "oct", "kid": "h"}), wantErr: "symmetric keys are never accepted"},
		{name: "unknown kty", jwks: set(map[string]any{"kty": "XYZ", "kid": "x"}), wantErr: `unsupported kty "XYZ"`},
		{name: "duplicate kid", jwks: set(jwk(edKey, nil), jwk(ecKey, map[string]any{"kid": "ed"})), wantErr: `duplicate kid "ed"`},
		{name: "alg member does not fit the key", jwks: set(jwk(rsaKey, map[string]any{"alg": "HS256"})), wantErr: "does not fit"},
		{name: "key_ops without verify", jwks: set(jwk(edKey, map[string]any{"key_ops": []string{"sign"}})), wantErr: "key_ops"},
		{name: "unknown use", jwks: set(jwk(edKey, map[string]any{"use": "other"})), wantErr: "unsupported use"},
		{name: "RSA even exponent", jwks: set(jwk(rsaKey, map[string]any{"e": b64([]byte{2})})), wantErr: "exponent"},
		{name: "RSA exponent 1", jwks: set(jwk(rsaKey, map[string]any{"e": b64([]byte{1})})), wantErr: "exponent"},
		{name: "RSA huge exponent", jwks: set(jwk(rsaKey, map[string]any{"e": b64([]byte{1, 0, 0, 0, 0, 1})})), wantErr: "exponent"},
		{name: "RSA padded base64", jwks: set(jwk(rsaKey, map[string]any{"e": "AQAB="})), wantErr: "invalid e"},
		{name: "RSA missing n", jwks: set(jwk(rsaKey, map[string]any{"n": nil})), wantErr: "invalid n"},
		{name: "EC unknown curve", jwks: set(jwk(ecKey, map[string]any{"crv": "secp256k1"})), wantErr: "unsupported crv"},
		{name: "EC short x", jwks: set(jwk(ecKey, map[string]any{"x": ecX[:20]})), wantErr: "must be 48 bytes"},
		{name: "EC point off the curve", jwks: set(jwk(ecKey, map[string]any{"y": ecX})), wantErr: "not on the curve"},
		{name: "OKP wrong curve", jwks: set(jwk(edKey, map[string]any{"crv": "X25519"})), wantErr: "unsupported crv"},
		{name: "OKP short key", jwks: set(jwk(edKey, map[string]any{"x": b64(make([]byte, 31))})), wantErr: "32 bytes"},
		{name: "too large", jwks: `{"keys":[],"pad":"` + strings.Repeat("x", maxJWKSBytes) + `"}`, wantErr: "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ks, err := parseJWKS([]byte(tt.jwks))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseJWKS error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseJWKS: %v", err)
			}
			var kids []string
			for _, k := range ks.keys {
				kids = append(kids, k.kid)
			}
			if strings.Join(kids, ",") != strings.Join(tt.wantKids, ",") {
				t.Fatalf("kids = %q, want %q", kids, tt.wantKids)
			}
		})
	}
}

func TestParseJWKSRejectsSmallRSA(t *testing.T) {
	t.Parallel()
	weak := authtest.NewRSAKey(t, "weak", 1024)
	_, err := parseJWKS(authtest.JWKS(t, weak))
	if err == nil || !strings.Contains(err.Error(), "modulus of 1024 bits") {
		t.Fatalf("parseJWKS error = %v, want the 1024-bit modulus refused", err)
	}
}

func TestKeyFitsAlg(t *testing.T) {
	t.Parallel()
	rsaPriv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		key  any
		alg  string
		want bool
	}{
		{name: "RSA RS256", key: &rsaPriv.PublicKey, alg: "RS256", want: true},
		{name: "RSA PS512", key: &rsaPriv.PublicKey, alg: "PS512", want: true},
		{name: "RSA as HMAC secret", key: &rsaPriv.PublicKey, alg: "HS256", want: false},
		{name: "RSA ES256", key: &rsaPriv.PublicKey, alg: "ES256", want: false},
		{name: "P-256 ES256", key: &p256.PublicKey, alg: "ES256", want: true},
		{name: "P-256 ES384", key: &p256.PublicKey, alg: "ES384", want: false},
		{name: "P-256 RS256", key: &p256.PublicKey, alg: "RS256", want: false},
		{name: "Ed25519 EdDSA", key: edPub, alg: "EdDSA", want: true},
		{name: "Ed25519 HS256", key: edPub, alg: "HS256", want: false},
		{name: "bytes never fit", key: []byte("secret"), alg: "HS256", want: false},
		{name: "none", key: edPub, alg: "none", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := keyFitsAlg(tt.key, tt.alg)
			if got := err == nil; got != tt.want {
				t.Fatalf("keyFitsAlg(%T, %s) = %v, want fit %v", tt.key, tt.alg, err, tt.want)
			}
			if err != nil && !errors.Is(err, errKeyDoesNotFitAlg) {
				t.Fatalf("error %v does not wrap errKeyDoesNotFitAlg", err)
			}
		})
	}
}

func TestIsLoopbackHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		host string
		want bool
	}{
		{name: "ipv4", host: "127.0.0.1", want: true},
		{name: "ipv4 range", host: "127.8.9.10", want: true},
		{name: "ipv6", host: "::1", want: true},
		{name: "localhost", host: "localhost", want: true},
		{name: "public ip", host: "8.8.8.8", want: false},
		{name: "localhost lookalike", host: "localhost.evil.com", want: false},
		{name: "unspecified", host: "0.0.0.0", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := loopback.Host(tt.host); got != tt.want {
				t.Fatalf("loopback.Host(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}
