package upstream

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/store"
)

// MDIdentity carries toolsvc's signed assertion of who is calling: a JWT
// (docs/OPERATIONS.md, "Identity of callers to upstreams") an upstream
// verifies against toolsvc's JWKS. It is the gRPC metadata key and the
// HTTP header of MCP upstreams; MCP upstreams also find it in a call's
// _meta under MetaIdentity (stdio servers have no headers).
const (
	MDIdentity   = "x-toolsvc-identity"
	MetaIdentity = "toolsvc/identity"
)

// IdentityType is the assertion's `typ` header: explicitly typed (RFC
// 8725, section 3.11), so that no other JWT of toolsvc's issuer passes for
// one, nor one for another kind of token.
const IdentityType = "toolsvc-identity+jwt"

// Assertion lifetimes: the default and the longest an operator may set
// (identity.ttl).
const (
	DefaultAssertionTTL = 60 * time.Second
	MaxAssertionTTL     = 5 * time.Minute
)

// Key rotation: DefaultKeyRotation is how long one key signs;
// MinKeyRotation the shortest period allowed, longer than any assertion
// lives, so that the key that signed an assertion is still published
// when the assertion expires.
const (
	DefaultKeyRotation = 24 * time.Hour
	MinKeyRotation     = 2 * time.Second
)

// Identity signs the assertions of every forwarded call with keys it
// keeps in the store: one key per rotation period, the same for every
// replica (the first replica to make a period's key wins, the others
// read it). The key of the next period is made and published a whole
// period before it signs, and a retired key stays published for
// MaxAssertionTTL after its period, so a verifier that caches the key set
// for less than a period never meets an unknown key, and a rotation fails
// no call.
type Identity struct {
	keys     store.SigningKeyStore
	issuer   string
	rotation time.Duration
	now      func() time.Time

	mu  sync.Mutex // serialises loads
	set atomic.Pointer[keySet]
	// refreshing is set while a background load of the next period runs.
	refreshing atomic.Bool
}

// keySet is what one load read: the keys that sign, by period, and the
// public keys to publish.
type keySet struct {
	period  int64 // the period it was loaded in
	signers map[int64]*signingKey
	jwks    []byte
}

type signingKey struct {
	kid     string
	private ed25519.PrivateKey
	// header is the JWT's encoded header, the same for every assertion
	// of the key.
	header string
}

// IdentityOption configures NewIdentity.
type IdentityOption func(*Identity)

// WithKeyRotation sets how long one signing key signs. Default
// DefaultKeyRotation (24h); at least MinKeyRotation.
func WithKeyRotation(d time.Duration) IdentityOption {
	return func(i *Identity) { i.rotation = d }
}

// WithIdentityClock sets the clock. Default time.Now.
func WithIdentityClock(now func() time.Time) IdentityOption {
	return func(i *Identity) { i.now = now }
}

// NewIdentity returns the signer of assertions issued by issuer (toolsvc's
// public URL), with keys in keys.
func NewIdentity(keys store.SigningKeyStore, issuer string, opts ...IdentityOption) (*Identity, error) {
	i := &Identity{keys: keys, issuer: issuer, rotation: DefaultKeyRotation, now: time.Now}
	for _, o := range opts {
		o(i)
	}
	if i.rotation < MinKeyRotation {
		return nil, fmt.Errorf("identity key rotation %s: want at least %s", i.rotation, MinKeyRotation)
	}
	if issuer == "" {
		return nil, errors.New("identity: the issuer (the public URL) is empty")
	}
	return i, nil
}

// Issuer is the assertions' `iss`.
func (i *Identity) Issuer() string { return i.issuer }

// Rotation is how long one key signs.
func (i *Identity) Rotation() time.Duration { return i.rotation }

func (i *Identity) periodOf(t time.Time) int64 { return t.UnixNano() / int64(i.rotation) }

// current returns the key of the current period, loading the key set when
// it does not hold it. Once loaded, a new period's key is already held (it
// was made a period ahead): the call signs with it at once while the
// next period's key is made in the background.
func (i *Identity) current(ctx context.Context) (*signingKey, error) {
	p := i.periodOf(i.now())
	if s := i.set.Load(); s != nil {
		if k := s.signers[p]; k != nil {
			if s.period != p && i.refreshing.CompareAndSwap(false, true) {
				go func() {
					defer i.refreshing.Store(false)
					ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
					defer cancel()
					_, _ = i.load(ctx, p) // on failure the next call tries again
				}()
			}
			return k, nil
		}
	}
	s, err := i.load(ctx, p)
	if err != nil {
		return nil, err
	}
	return s.signers[p], nil
}

// load makes the keys of periods p and p+1 unless they exist, and reads
// every key that is to be published.
func (i *Identity) load(ctx context.Context, p int64) (*keySet, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if s := i.set.Load(); s != nil && s.period >= p {
		return s, nil
	}
	for _, q := range []int64{p, p + 1} {
		seed := make([]byte, ed25519.SeedSize)
		_, _ = rand.Read(seed)
		start := time.Unix(0, q*int64(i.rotation)).UTC()
		k := &store.SigningKey{ID: i.kid(q), Alg: "EdDSA", Private: seed, NotBefore: start, NotAfter: start.Add(i.rotation)}
		if err := i.keys.AddSigningKey(ctx, k); err != nil {
			return nil, fmt.Errorf("identity: store the signing key: %w", err)
		}
	}
	// Keys that retired up to MaxAssertionTTL ago still verify what they
	// signed; a minute more covers clocks a little apart.
	keys, err := i.keys.SigningKeys(ctx, time.Unix(0, p*int64(i.rotation)).Add(-MaxAssertionTTL-time.Minute))
	if err != nil {
		return nil, fmt.Errorf("identity: read the signing keys: %w", err)
	}
	s := &keySet{period: p, signers: map[int64]*signingKey{}}
	type jwk struct {
		Kty string `json:"kty"`
		Crv string `json:"crv"`
		X   string `json:"x"`
		Kid string `json:"kid"`
		Use string `json:"use"`
		Alg string `json:"alg"`
	}
	var pub struct {
		Keys []jwk `json:"keys"`
	}
	pub.Keys = []jwk{}
	for _, k := range keys {
		if k.Alg != "EdDSA" || len(k.Private) != ed25519.SeedSize {
			continue
		}
		priv := ed25519.NewKeyFromSeed(k.Private)
		pub.Keys = append(pub.Keys, jwk{Kty: "OKP", Crv: "Ed25519", X: b64(priv.Public().(ed25519.PublicKey)), Kid: k.ID, Use: "sig", Alg: "EdDSA"})
		q := i.periodOf(k.NotBefore)
		if k.ID == i.kid(q) {
			h, _ := json.Marshal(map[string]string{"alg": "EdDSA", "kid": k.ID, "typ": IdentityType})
			s.signers[q] = &signingKey{kid: k.ID, private: priv, header: b64(h)}
		}
	}
	if s.signers[p] == nil {
		return nil, errors.New("identity: the store holds no key for the current period")
	}
	s.jwks, _ = json.Marshal(pub)
	i.set.Store(s)
	return s, nil
}

// kid names the key of period q: its start and the period's length, so
// that a changed rotation never mistakes another period's key for its own.
func (i *Identity) kid(q int64) string {
	return strconv.FormatInt(time.Unix(0, q*int64(i.rotation)).Unix(), 10) + "-" + strconv.FormatInt(int64(i.rotation/time.Second), 10)
}

// JWKS returns the public keys (RFC 7517) that verify assertions: the
// current key, the next one, and those retired within MaxAssertionTTL.
func (i *Identity) JWKS(ctx context.Context) ([]byte, error) {
	p := i.periodOf(i.now())
	if s := i.set.Load(); s != nil && s.period == p {
		return s.jwks, nil
	}
	s, err := i.load(ctx, p)
	if err != nil {
		return nil, err
	}
	return s.jwks, nil
}

// Claims are an assertion's claims (docs/OPERATIONS.md, "Identity of
// callers to upstreams"), shaped after RFC 9068: what the chain decided
// about the call, nothing the caller claimed of itself.
type Claims struct {
	Issuer   string `json:"iss"`
	Audience string `json:"aud"`
	Subject  string `json:"sub"`
	Tenant   string `json:"tenant,omitempty"`
	OrgID    string `json:"org_id,omitempty"`
	TeamID   string `json:"team_id,omitempty"`
	// ProjectID, UserID and SessionID are the caller's identifiers.
	ProjectID string `json:"project_id,omitempty"`
	UserID    string `json:"user_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	// Permissions are the tool's permissions, every one held by the
	// caller: what admitted this call, never the caller's other grants.
	Permissions []string `json:"permissions"`
	// Tool is name@version.
	Tool string `json:"tool,omitempty"`
	// Act is the agent acting for the subject (RFC 8693, section 4.1).
	Act       *Actor `json:"act,omitempty"`
	Transport string `json:"transport,omitempty"`
	TraceID   string `json:"trace_id,omitempty"`
	ID        string `json:"jti"`
	IssuedAt  int64  `json:"iat"`
	NotBefore int64  `json:"nbf"`
	Expiry    int64  `json:"exp"`
}

// Actor is the `act` claim.
type Actor struct {
	Subject string `json:"sub"`
}

// ClaimsFor are the claims of the call in ctx to upstream aud, valid for
// ttl from now.
func ClaimsFor(ctx context.Context, f *callctx.Facts, aud string, now time.Time, ttl time.Duration) *Claims {
	c := &Claims{Audience: aud, Subject: f.Subject, Tenant: f.Tenant,
		OrgID: f.ID(callctx.KeyOrgID), TeamID: f.ID(callctx.KeyTeamID), ProjectID: f.ID(callctx.KeyProjectID),
		UserID: f.ID(callctx.KeyUserID), SessionID: f.ID(callctx.KeySessionID),
		Permissions: []string{}, Transport: f.Transport, TraceID: f.TraceID,
		IssuedAt: now.Unix(), NotBefore: now.Unix(), Expiry: now.Add(ttl).Unix()}
	if a := callctx.AdmissionFrom(ctx); a != nil {
		c.Permissions = append(c.Permissions, a.Permissions...)
		c.Tool = a.Tool + "@" + a.Version
	}
	if agent := f.ID(callctx.KeyAgentID); agent != "" {
		c.Act = &Actor{Subject: agent}
	}
	return c
}

// Sign returns the assertion of c, issued by toolsvc now, with a fresh
// jti, signed with the current key.
func (i *Identity) Sign(ctx context.Context, c *Claims) (string, error) {
	k, err := i.current(ctx)
	if err != nil {
		return "", err
	}
	c.Issuer = i.issuer
	var id [16]byte
	_, _ = rand.Read(id[:])
	c.ID = b64(id[:])
	body, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("identity: %w", err)
	}
	signing := k.header + "." + b64(body)
	return signing + "." + b64(ed25519.Sign(k.private, []byte(signing))), nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
