// Package authtest mints keys, JWKS files and JWTs — valid and deliberately
// broken — for tests of code that authenticates with package auth.
package authtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Claims is a JWT claims set.
type Claims = map[string]any

// KeyPair is a signing key, its public half, and the kid and alg its tokens
// carry.
type KeyPair struct {
	// Kid is the key id, in the JWK and in the header of signed tokens.
	Kid string
	// Alg is the JWT algorithm Sign uses, e.g. "RS256".
	Alg string
	// Private signs tokens.
	Private crypto.Signer
	// Public verifies them; it is what the JWK publishes.
	Public crypto.PublicKey
}

// NewRSAKey generates an RSA key of bits bits that signs with RS256.
func NewRSAKey(tb testing.TB, kid string, bits int) *KeyPair {
	tb.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		tb.Fatalf("authtest: generate RSA-%d key: %v", bits, err)
	}
	return &KeyPair{Kid: kid, Alg: "RS256", Private: priv, Public: &priv.PublicKey}
}

// NewECKey generates an ECDSA key on curve (P-256, P-384 or P-521) that
// signs with ES256, ES384 or ES512 accordingly.
func NewECKey(tb testing.TB, kid string, curve elliptic.Curve) *KeyPair {
	tb.Helper()
	alg, ok := map[string]string{"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}[curve.Params().Name]
	if !ok {
		tb.Fatalf("authtest: unsupported curve %s", curve.Params().Name)
	}
	priv, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		tb.Fatalf("authtest: generate EC key: %v", err)
	}
	return &KeyPair{Kid: kid, Alg: alg, Private: priv, Public: &priv.PublicKey}
}

// NewEd25519Key generates an Ed25519 key that signs with EdDSA.
func NewEd25519Key(tb testing.TB, kid string) *KeyPair {
	tb.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatalf("authtest: generate Ed25519 key: %v", err)
	}
	return &KeyPair{Kid: kid, Alg: "EdDSA", Private: priv, Public: pub}
}

// NewEd25519KeyFromSeed derives an Ed25519 key from a 32-byte seed, for tests
// (such as fuzz tests) that need the same key in every process.
func NewEd25519KeyFromSeed(tb testing.TB, kid string, seed []byte) *KeyPair {
	tb.Helper()
	if len(seed) != ed25519.SeedSize {
		tb.Fatalf("authtest: Ed25519 seed must be %d bytes", ed25519.SeedSize)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return &KeyPair{Kid: kid, Alg: "EdDSA", Private: priv, Public: priv.Public()}
}

// JWK returns the public JWK of k, with kid, use "sig" and no alg member.
func (k *KeyPair) JWK(tb testing.TB) map[string]any {
	tb.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	m := map[string]any{"kid": k.Kid, "use": "sig"}
	switch pub := k.Public.(type) {
	case *rsa.PublicKey:
		m["kty"] = "RSA"
		m["n"] = b64(pub.N.Bytes())
		m["e"] = b64(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		point, err := pub.Bytes()
		if err != nil {
			tb.Fatalf("authtest: encode EC key: %v", err)
		}
		size := (len(point) - 1) / 2
		m["kty"] = "EC"
		m["crv"] = pub.Curve.Params().Name
		m["x"] = b64(point[1 : 1+size])
		m["y"] = b64(point[1+size:])
	case ed25519.PublicKey:
		m["kty"] = "OKP"
		m["crv"] = "Ed25519"
		m["x"] = b64(pub)
	default:
		tb.Fatalf("authtest: unsupported public key %T", k.Public)
	}
	return m
}

// JWKS returns the JSON JWK Set of the public halves of keys.
func JWKS(tb testing.TB, keys ...*KeyPair) []byte {
	tb.Helper()
	set := make([]map[string]any, 0, len(keys))
	for _, k := range keys {
		set = append(set, k.JWK(tb))
	}
	data, err := json.Marshal(map[string]any{"keys": set})
	if err != nil {
		tb.Fatalf("authtest: marshal JWKS: %v", err)
	}
	return data
}

// WriteJWKS writes the JWKS of keys to a file in a fresh temporary directory
// and returns its path.
func WriteJWKS(tb testing.TB, keys ...*KeyPair) string {
	tb.Helper()
	return WriteFile(tb, "jwks.json", JWKS(tb, keys...))
}

// WriteFile writes data to name in a fresh temporary directory and returns
// its path; handy for auth files.
func WriteFile(tb testing.TB, name string, data []byte) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatalf("authtest: write %s: %v", name, err)
	}
	return path
}

// StandardClaims returns claims valid from now for ttl: iss, aud, sub,
// tenant, iat and exp.
func StandardClaims(issuer, audience, subject, tenant string, now time.Time, ttl time.Duration) Claims {
	return Claims{
		"iss":    issuer,
		"aud":    audience,
		"sub":    subject,
		"tenant": tenant,
		"iat":    now.Unix(),
		"exp":    now.Add(ttl).Unix(),
	}
}

// Sign returns a JWT of claims signed by k, with header {alg, kid, typ}.
func (k *KeyPair) Sign(tb testing.TB, claims Claims) string {
	tb.Helper()
	return k.SignWithHeader(tb, nil, claims)
}

// SignWithHeader is Sign with header members overriding the defaults
// {alg: k.Alg, kid: k.Kid, typ: "JWT"}; a nil value removes a member. The
// signature is made with the (possibly overridden) alg and k's private key.
func (k *KeyPair) SignWithHeader(tb testing.TB, header map[string]any, claims Claims) string {
	tb.Helper()
	h := map[string]any{"alg": k.Alg, "kid": k.Kid, "typ": "JWT"}
	maps.Copy(h, header)
	maps.DeleteFunc(h, func(_ string, v any) bool { return v == nil })
	return SignRaw(tb, h, claims, k.Private)
}

// SignRaw encodes header and claims as given and signs them with key using
// the algorithm named by header["alg"]. key may be any type the algorithm
// takes, including []byte for HS256; a nil key gives an empty signature
// whatever the alg (for "none", "NONE" or a missing alg).
func SignRaw(tb testing.TB, header map[string]any, claims Claims, key any) string {
	tb.Helper()
	input := encodeSegment(tb, header) + "." + encodeSegment(tb, claims)
	if key == nil {
		return input + "."
	}
	alg, _ := header["alg"].(string)
	method := jwt.GetSigningMethod(alg)
	if method == nil {
		tb.Fatalf("authtest: unknown alg %q", alg)
	}
	sig, err := method.Sign(input, key)
	if err != nil {
		tb.Fatalf("authtest: sign with %s: %v", alg, err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// NoneToken returns an unsigned token with alg "none", the classic attack.
func NoneToken(tb testing.TB, kid string, claims Claims) string {
	tb.Helper()
	return SignRaw(tb, map[string]any{"alg": "none", "kid": kid, "typ": "JWT"}, claims, nil)
}

// HS256Token returns a token signed with HMAC-SHA256 using secret, e.g. a
// public key's bytes, the algorithm-confusion attack.
func HS256Token(tb testing.TB, secret []byte, kid string, claims Claims) string {
	tb.Helper()
	return SignRaw(tb, map[string]any{"alg": "HS256", "kid": kid, "typ": "JWT"}, claims, secret)
}

// PublicKeyPEM returns k's public key as a PKIX PEM block, the bytes an
// algorithm-confusion attacker would use as an HMAC secret.
func (k *KeyPair) PublicKeyPEM(tb testing.TB) []byte {
	tb.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.Public)
	if err != nil {
		tb.Fatalf("authtest: marshal public key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// RSAModulus returns the big-endian bytes of an RSA key's modulus, the JWK's
// "n" decoded.
func (k *KeyPair) RSAModulus(tb testing.TB) []byte {
	tb.Helper()
	pub, ok := k.Public.(*rsa.PublicKey)
	if !ok {
		tb.Fatalf("authtest: %T is not an RSA key", k.Public)
	}
	return pub.N.Bytes()
}

// TamperClaims replaces the claims of token while keeping its header and
// signature, which must then fail verification.
func TamperClaims(tb testing.TB, token string, claims Claims) string {
	tb.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		tb.Fatalf("authtest: not a JWT")
	}
	parts[1] = encodeSegment(tb, claims)
	return strings.Join(parts, ".")
}

func encodeSegment(tb testing.TB, v any) string {
	tb.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("authtest: marshal segment: %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}
