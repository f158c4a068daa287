package auth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
)

// JWKS limits: a JWKS larger than maxJWKSBytes or with more than maxJWKSKeys
// keys is refused, and RSA moduli must be 2048 to 8192 bits (smaller ones are
// forgeable, larger ones only make verification a denial-of-service lever).
const (
	maxJWKSBytes  = 1 << 20
	maxJWKSKeys   = 100
	minRSABits    = 2048
	maxRSABits    = 8192
	maxRSAExpBits = 32
)

// jwk is one verification key of a JWKS.
type jwk struct {
	kid string
	alg string // the JWK's "alg", optional: when set, only that algorithm may use it
	key crypto.PublicKey
}

// keySet is an immutable parsed JWKS.
type keySet struct {
	keys  []*jwk
	byKid map[string]*jwk
}

// rawJWK is a JWK as it appears in JSON. Private members are decoded only to
// refuse a JWKS that leaks private keys.
type rawJWK struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid"`
	Use    string   `json:"use"`
	Alg    string   `json:"alg"`
	KeyOps []string `json:"key_ops"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	Crv    string   `json:"crv"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
	D      string   `json:"d"`
	K      string   `json:"k"`
}

// parseJWKS parses a JWK Set of RSA, EC (P-256/384/521) and Ed25519 public
// keys. Keys marked for encryption ("use": "enc") are skipped; anything
// unsafe or unknown fails the whole set, so that a bad rotation keeps the old
// keys instead of half-loading a new set.
func parseJWKS(data []byte) (*keySet, error) {
	if len(data) > maxJWKSBytes {
		return nil, fmt.Errorf("jwks: larger than %d bytes", maxJWKSBytes)
	}
	var doc struct {
		Keys []rawJWK `json:"keys"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	if dec.More() {
		return nil, errors.New("jwks: trailing data after the key set")
	}
	if len(doc.Keys) > maxJWKSKeys {
		return nil, fmt.Errorf("jwks: more than %d keys", maxJWKSKeys)
	}
	ks := &keySet{byKid: make(map[string]*jwk, len(doc.Keys))}
	for i, raw := range doc.Keys {
		if raw.Use == "enc" {
			continue
		}
		k, err := raw.parse()
		if err != nil {
			return nil, fmt.Errorf("jwks: keys[%d] (kid %q): %w", i, raw.Kid, err)
		}
		if _, dup := ks.byKid[k.kid]; dup {
			return nil, fmt.Errorf("jwks: keys[%d]: duplicate kid %q", i, k.kid)
		}
		ks.byKid[k.kid] = k
		ks.keys = append(ks.keys, k)
	}
	if len(ks.keys) == 0 {
		return nil, errors.New("jwks: no signature verification keys")
	}
	return ks, nil
}

func (r *rawJWK) parse() (*jwk, error) {
	if r.D != "" || r.K != "" {
		return nil, errors.New("contains private or symmetric key material")
	}
	if r.Use != "" && r.Use != "sig" {
		return nil, fmt.Errorf("unsupported use %q", r.Use)
	}
	if len(r.KeyOps) > 0 && !slices.Contains(r.KeyOps, "verify") {
		return nil, errors.New("key_ops does not include verify")
	}
	var (
		key crypto.PublicKey
		err error
	)
	switch r.Kty {
	case "RSA":
		key, err = parseRSAJWK(r.N, r.E)
	case "EC":
		key, err = parseECJWK(r.Crv, r.X, r.Y)
	case "OKP":
		key, err = parseOKPJWK(r.Crv, r.X)
	case "oct":
		err = errors.New("symmetric keys are never accepted")
	default:
		err = fmt.Errorf("unsupported kty %q", r.Kty)
	}
	if err != nil {
		return nil, err
	}
	k := &jwk{kid: r.Kid, alg: r.Alg, key: key}
	if r.Alg != "" {
		if err := keyFitsAlg(key, r.Alg); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func parseRSAJWK(n64, e64 string) (*rsa.PublicKey, error) {
	nb, err := decodeB64URL(n64)
	if err != nil || len(nb) == 0 {
		return nil, errors.New("rsa: invalid n")
	}
	eb, err := decodeB64URL(e64)
	if err != nil || len(eb) == 0 {
		return nil, errors.New("rsa: invalid e")
	}
	n := new(big.Int).SetBytes(nb)
	e := new(big.Int).SetBytes(eb)
	if bits := n.BitLen(); bits < minRSABits || bits > maxRSABits {
		return nil, fmt.Errorf("rsa: modulus of %d bits (want %d to %d)", bits, minRSABits, maxRSABits)
	}
	if e.BitLen() > maxRSAExpBits-1 || e.Int64() < 3 || e.Bit(0) == 0 {
		return nil, errors.New("rsa: exponent must be odd, at least 3 and below 2^31")
	}
	return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
}

var ecCurves = map[string]elliptic.Curve{
	"P-256": elliptic.P256(),
	"P-384": elliptic.P384(),
	"P-521": elliptic.P521(),
}

func parseECJWK(crv, x64, y64 string) (*ecdsa.PublicKey, error) {
	curve, ok := ecCurves[crv]
	if !ok {
		return nil, fmt.Errorf("ec: unsupported crv %q", crv)
	}
	size := (curve.Params().BitSize + 7) / 8
	x, errX := decodeB64URL(x64)
	y, errY := decodeB64URL(y64)
	if errX != nil || errY != nil || len(x) != size || len(y) != size {
		return nil, fmt.Errorf("ec: x and y must be %d bytes of base64url", size)
	}
	point := append(append([]byte{4}, x...), y...)
	key, err := ecdsa.ParseUncompressedPublicKey(curve, point)
	if err != nil {
		return nil, errors.New("ec: point is not on the curve")
	}
	return key, nil
}

func parseOKPJWK(crv, x64 string) (ed25519.PublicKey, error) {
	if crv != "Ed25519" {
		return nil, fmt.Errorf("okp: unsupported crv %q", crv)
	}
	x, err := decodeB64URL(x64)
	if err != nil || len(x) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("okp: x must be %d bytes of base64url", ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(x), nil
}

// decodeB64URL decodes unpadded base64url, as JWKs use (RFC 7518).
func decodeB64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.Strict().DecodeString(s)
}

// errKeyDoesNotFitAlg is returned when a key's type cannot serve an
// algorithm, which is what keeps an RSA public key from ever being used as
// an HMAC secret.
var errKeyDoesNotFitAlg = errors.New("key type does not fit the algorithm")

// keyFitsAlg reports whether key may verify signatures made with alg.
func keyFitsAlg(key crypto.PublicKey, alg string) error {
	ok := false
	switch k := key.(type) {
	case *rsa.PublicKey:
		switch alg {
		case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
			ok = true
		}
	case *ecdsa.PublicKey:
		want := map[string]string{"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}[alg]
		ok = want != "" && k.Curve.Params().Name == want
	case ed25519.PublicKey:
		ok = alg == "EdDSA"
	}
	if !ok {
		return fmt.Errorf("%w: %T cannot verify %s", errKeyDoesNotFitAlg, key, alg)
	}
	return nil
}

// lookup returns the key for a token's kid and alg. A token without kid is
// accepted only when the set holds a single key.
func (ks *keySet) lookup(kid, alg string) (*jwk, error) {
	var k *jwk
	switch {
	case kid != "":
		k = ks.byKid[kid]
	case len(ks.keys) == 1:
		k = ks.keys[0]
	}
	if k == nil {
		return nil, errUnknownKid
	}
	if k.alg != "" && k.alg != alg {
		return nil, fmt.Errorf("%w: key is for %s", errKeyDoesNotFitAlg, k.alg)
	}
	if err := keyFitsAlg(k.key, alg); err != nil {
		return nil, err
	}
	return k, nil
}

var errUnknownKid = errors.New("unknown key id")
