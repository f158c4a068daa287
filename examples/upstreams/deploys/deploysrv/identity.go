package deploysrv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Identity is who toolsvc says is calling: the claims of its signed
// x-toolsvc-identity assertion (toolsvc's docs/OPERATIONS.md, "Identity
// of callers to upstreams").
type Identity struct {
	Subject     string   `json:"sub"`
	Tenant      string   `json:"tenant"`
	Permissions []string `json:"permissions"`
	Tool        string   `json:"tool"`
	TraceID     string   `json:"trace_id"`
	Act         *struct {
		Subject string `json:"sub"`
	} `json:"act"`
}

// Verifier checks toolsvc's assertions with go-jose against toolsvc's
// JWKS, fetched from JWKSURL and fetched again when an assertion names a
// key it does not hold (toolsvc rotates its keys), at most once a second.
type Verifier struct {
	// JWKSURL is toolsvc's /.well-known/jwks.json; Issuer its public URL;
	// Audience this upstream's name in toolsvc's upstreams file.
	JWKSURL, Issuer, Audience string

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	fetched time.Time
}

// Verify returns the identity of a valid assertion: signed by a key of
// toolsvc's, typed as toolsvc's identity, for this audience, from this
// issuer, and not expired.
func (v *Verifier) Verify(ctx context.Context, assertion string) (*Identity, error) {
	tok, err := jwt.ParseSigned(assertion, []jose.SignatureAlgorithm{jose.EdDSA, jose.ES256})
	if err != nil {
		return nil, fmt.Errorf("not a signed JWT: %w", err)
	}
	h := tok.Headers[0]
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != "toolsvc-identity+jwt" {
		return nil, fmt.Errorf("typ %q is not toolsvc's identity", typ)
	}
	key, err := v.key(ctx, h.KeyID)
	if err != nil {
		return nil, err
	}
	var (
		std jwt.Claims
		id  Identity
	)
	if err := tok.Claims(key, &std, &id); err != nil {
		return nil, fmt.Errorf("bad signature: %w", err)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: v.Issuer, AnyAudience: jwt.Audience{v.Audience}, Time: time.Now()}, 5*time.Second); err != nil {
		return nil, err
	}
	return &id, nil
}

// Allows reports whether the permissions that admitted the call include
// permission.
func (i *Identity) Allows(permission string) bool { return slices.Contains(i.Permissions, permission) }

func (v *Verifier) key(ctx context.Context, kid string) (any, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if ks := v.keys.Key(kid); len(ks) > 0 {
		return ks[0].Key, nil
	}
	if time.Since(v.fetched) < time.Second {
		return nil, fmt.Errorf("unknown key %q", kid)
	}
	v.fetched = time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.JWKSURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the JWKS: %s", resp.Status)
	}
	var ks jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&ks); err != nil {
		return nil, fmt.Errorf("the JWKS does not decode: %w", err)
	}
	v.keys = ks
	if ks := v.keys.Key(kid); len(ks) > 0 {
		return ks[0].Key, nil
	}
	return nil, errors.New("unknown key " + kid)
}
