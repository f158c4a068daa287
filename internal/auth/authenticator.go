package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// MaxTokenBytes is the longest token accepted; longer ones are
// MalformedCredentials before any parsing or hashing.
const MaxTokenBytes = 8 << 10

// Authenticator turns an authorization header into a [Principal]. It is safe
// for concurrent use.
type Authenticator struct {
	dev     bool
	apiKeys map[[sha256.Size]byte]*apiKeyEntry
	jwt     *jwtVerifier // nil when the config has no jwt section
	// certs are the client_certs principals by ClientCertConfig.matchKey.
	certs map[string]*Principal
	// live is the policy in force and its subscribers (live.go); an
	// Authenticator is used through a pointer and never copied.
	live liveState
	// pol is the compiled roles and tool sets.
	pol *policySnapshot
	// entries are the API key and client certificate principals in file
	// order, for explain.
	entries []Entry
}

// Entry is one API key or client certificate entry of the auth file, as
// explain names it: where it is and the principal it becomes.
type Entry struct {
	// Where is "api_keys[2]" or "client_certs[0]".
	Where string
	// Principal is a copy of the entry's principal, roles granted.
	Principal *Principal
}

type apiKeyEntry struct {
	digest    [sha256.Size]byte
	principal *Principal
}

// New builds an Authenticator from a validated cfg (see [Config.Validate]).
// A jwks_file is read now; a jwks_url is fetched now (bounded by a timeout,
// failing New if it fails) and then refreshed by [Authenticator.Run]. New
// starts no goroutine.
func New(ctx context.Context, cfg *Config, opts ...Option) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	a := newPolicy(cfg)
	if cfg.JWT != nil {
		v, err := newJWTVerifier(ctx, cfg.JWT, &o)
		if err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		a.jwt = v
	}
	return a, nil
}

// newPolicy builds the API keys and client certificates of a validated
// cfg; the caller adds the JWT verifier.
func newPolicy(cfg *Config) *Authenticator {
	a := &Authenticator{apiKeys: make(map[[sha256.Size]byte]*apiKeyEntry, len(cfg.APIKeys)), pol: compilePolicy(cfg)}
	a.live.config = cfg
	for i, k := range cfg.APIKeys {
		e := &apiKeyEntry{principal: &Principal{
			Subject:     k.Subject,
			Tenant:      k.Tenant,
			Permissions: slices.Clone(k.Permissions),
			ReadOnly:    k.ReadOnly,
			ActForUsers: k.ActForUsers,
			Identifiers: maps.Clone(k.Identifiers),
			Method:      MethodAPIKey,
			ToolSets:    slices.Clone(k.ToolSets),
		}}
		a.pol.grant(e.principal, k.Roles)
		a.pol.bind(e.principal)
		a.entries = append(a.entries, Entry{Where: fmt.Sprintf("api_keys[%d]", i), Principal: e.principal})
		if k.Key != "" {
			e.digest = sha256.Sum256([]byte(k.Key))
		} else {
			b, _ := hex.DecodeString(k.KeySHA256) // checked by Validate
			copy(e.digest[:], b)
		}
		e.principal.credential = "key:" + hex.EncodeToString(e.digest[:])
		a.apiKeys[e.digest] = e
	}
	a.certs = make(map[string]*Principal, len(cfg.ClientCerts))
	for i, k := range cfg.ClientCerts {
		p := &Principal{
			Subject:     k.Subject,
			Tenant:      k.Tenant,
			Permissions: slices.Clone(k.Permissions),
			ReadOnly:    k.ReadOnly,
			ActForUsers: k.ActForUsers,
			Identifiers: maps.Clone(k.Identifiers),
			Method:      MethodClientCert,
			credential:  "cert:" + k.matchKey(),
			ToolSets:    slices.Clone(k.ToolSets),
		}
		a.pol.grant(p, k.Roles)
		a.pol.bind(p)
		a.certs[k.matchKey()] = p
		a.entries = append(a.entries, Entry{Where: fmt.Sprintf("client_certs[%d]", i), Principal: p})
	}
	return a
}

// DevelopmentTenant is the tenant of the development principal: the one
// tenant of a deployment without an auth file.
const DevelopmentTenant = "default"

// developmentPrincipal is what every request becomes without an auth file.
var developmentPrincipal = Principal{
	Subject:     "anonymous",
	Tenant:      DevelopmentTenant,
	Permissions: []string{"*"},
	Anonymous:   true,
	Method:      MethodAnonymous,
	Identifiers: map[string]string{
		IdentifierOrgID:     "dev",
		IdentifierTeamID:    "dev",
		IdentifierProjectID: "dev",
		IdentifierUserID:    "dev",
	},
}

// NewDevelopment returns an Authenticator for running without an auth file:
// every request, whatever its header, becomes the anonymous principal
// {Subject: "anonymous", Tenant: "default", Permissions: ["*"], Anonymous:
// true}, with every identifier "dev". It must never be used in production;
// [Authenticator.Development] lets the caller say so loudly.
func NewDevelopment() *Authenticator {
	return &Authenticator{dev: true, pol: compilePolicy(&Config{})}
}

// Development reports whether a was built by [NewDevelopment].
func (a *Authenticator) Development() bool {
	return a.current().dev
}

// Authenticate verifies the value of an authorization header,
// "Bearer <token>", and returns the principal it stands for; every failure is
// an *[Error]. A token of three dot-separated base64url parts is verified as
// a JWT, anything else is looked up as an API key. The returned principal is
// the caller's to keep and modify.
func (a *Authenticator) Authenticate(ctx context.Context, authorizationHeader string) (*Principal, error) {
	a.live.verifications.Add(1)
	return a.current().authenticate(ctx, authorizationHeader)
}

// Verifications is how many credentials a has verified (Authenticate and
// AuthenticatePeer calls, whatever their outcome): a transport that hands
// its caller on to the chain verifies each call's credential once.
func (a *Authenticator) Verifications() uint64 { return a.live.verifications.Load() }

func (a *Authenticator) authenticate(ctx context.Context, authorizationHeader string) (*Principal, error) {
	if a.dev {
		return developmentPrincipal.clone(), nil
	}
	token, err := bearerToken(authorizationHeader)
	if err != nil {
		return nil, err
	}
	if looksLikeJWT(token) {
		if a.jwt == nil {
			return nil, newError(InvalidCredentials, "JWT authentication is not configured")
		}
		p, err := a.jwt.verify(ctx, token)
		if err != nil {
			return nil, err
		}
		roles := p.Roles
		p.Roles = nil
		a.pol.grant(p, roles)
		a.pol.bind(p)
		return p, nil
	}
	return a.authenticateAPIKey(token)
}

// AuthenticatePeer is [Authenticator.Authenticate] for a caller that may
// also have presented a client certificate: state is the TLS state of its
// connection (nil without TLS). A bearer credential, when the caller sends
// one, decides, as in Authenticate. Without one, the leaf of the first
// chain the TLS handshake verified against the client CA (mutual TLS)
// becomes its client_certs principal, matched by URI SAN (in the
// certificate's order), then by subject DN; a verified certificate that
// matches no entry is refused like an unknown key. Unverified certificates
// (a server without a client CA) are never looked at.
func (a *Authenticator) AuthenticatePeer(ctx context.Context, authorizationHeader string, state *tls.ConnectionState) (*Principal, error) {
	a.live.verifications.Add(1)
	a = a.current()
	if a.dev || authorizationHeader != "" || state == nil || len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return a.authenticate(ctx, authorizationHeader)
	}
	return a.authenticateCert(state.VerifiedChains[0][0])
}

func (a *Authenticator) authenticateCert(leaf *x509.Certificate) (*Principal, error) {
	var template *Principal
	for _, u := range leaf.URIs {
		if template = a.certs["uri:"+u.String()]; template != nil {
			break
		}
	}
	if template == nil {
		template = a.certs["dn:"+leaf.Subject.String()]
	}
	if template == nil {
		return nil, newError(InvalidCredentials, "unknown client certificate")
	}
	p := template.clone()
	p.ExpiresAt = leaf.NotAfter
	return p, nil
}

func (a *Authenticator) authenticateAPIKey(token string) (*Principal, error) {
	digest := sha256.Sum256([]byte(token))
	e, ok := a.apiKeys[digest]
	// The map lookup is on a hash, which leaks nothing useful; the
	// constant-time comparison makes the match itself not depend on timing.
	if !ok || subtle.ConstantTimeCompare(digest[:], e.digest[:]) != 1 {
		return nil, newError(InvalidCredentials, "unknown API key")
	}
	return e.principal.clone(), nil
}

// bearerToken extracts the token of "Bearer <token>" (scheme case-insensitive,
// RFC 6750), refusing anything else without echoing it.
func bearerToken(header string) (string, error) {
	if strings.TrimSpace(header) == "" {
		return "", newError(MissingCredentials, "no authorization header")
	}
	if len(header) > len("Bearer ")+MaxTokenBytes {
		return "", newError(MalformedCredentials, fmt.Sprintf("token longer than %d bytes", MaxTokenBytes))
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", newError(MalformedCredentials, `authorization is not "Bearer <token>"`)
	}
	switch {
	case token == "":
		return "", newError(MissingCredentials, "empty bearer token")
	case len(token) > MaxTokenBytes:
		return "", newError(MalformedCredentials, fmt.Sprintf("token longer than %d bytes", MaxTokenBytes))
	case !isTokenText(token):
		return "", newError(MalformedCredentials, "token contains whitespace or non-printable characters")
	}
	return token, nil
}

// isTokenText reports whether s is printable ASCII without spaces, the
// alphabet of tokens and keys.
func isTokenText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return s != ""
}

// looksLikeJWT reports whether s has the shape of a JWS compact
// serialization: three dot-separated base64url parts, the first two
// non-empty (the signature may be empty, as in alg "none" tokens, which must
// be refused as JWTs rather than looked up as keys).
func looksLikeJWT(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return false
	}
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			c := p[i]
			if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return false
			}
		}
	}
	return true
}

// Run is the Authenticator's background work: it fetches the auth file's
// jwks_url again every [WithJWKSRefresh] interval until ctx ends, keeping
// the last good keys when a fetch fails; it returns at once without a
// jwks_url. A jwks_url that [Authenticator.Reload] brings in is refreshed
// by Reload's own loop, bounded by Reload's context.
func (a *Authenticator) Run(ctx context.Context) {
	if a == nil || a.jwt == nil || a.jwt.fetcher == nil {
		return
	}
	a.jwt.refreshLoop(ctx, a.jwt.fetcher, a.jwt.refresh)
}

// EntriesOf returns the API key and client certificate entries whose
// subject is subject, in file order, each principal a copy to keep.
func (a *Authenticator) EntriesOf(subject string) []Entry {
	a = a.current()
	var out []Entry
	for _, e := range a.entries {
		if e.Principal.Subject == subject {
			out = append(out, Entry{Where: e.Where, Principal: e.Principal.clone()})
		}
	}
	return out
}

// TokenPrincipal returns the principal a JWT with these claims would
// become (subject, tenant, permissions and the roles of roles_claim; the
// roles a's policy does not define are dropped), for explain to answer for
// a caller that is not an entry of the file.
func (a *Authenticator) TokenPrincipal(subject, tenant string, permissions, roles []string) *Principal {
	a = a.current()
	p := &Principal{Subject: subject, Tenant: tenant, Permissions: slices.Clone(permissions), Method: MethodJWT}
	a.pol.grant(p, roles)
	a.pol.bind(p)
	return p
}
