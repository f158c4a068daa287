package auth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// jwtVerifier verifies JWTs of one issuer against the current JWKS.
type jwtVerifier struct {
	algorithms        []string
	issuer            string
	tenantClaim       string
	permissionsClaim  string
	rolesClaim        string
	subjectClaim      string
	identifiersClaims map[string]string
	parser            *jwt.Parser
	keys              atomic.Pointer[keySet]
	logger            *slog.Logger
	// fetcher and refresh are the jwks_url's (nil for a jwks_file).
	fetcher *jwksFetcher
	refresh time.Duration
}

func newJWTVerifier(ctx context.Context, c *JWTConfig, o *options) (*jwtVerifier, error) {
	v := &jwtVerifier{
		algorithms:        c.Algorithms,
		issuer:            c.Issuer,
		tenantClaim:       cmp.Or(c.TenantClaim, DefaultTenantClaim),
		permissionsClaim:  cmp.Or(c.PermissionsClaim, DefaultPermissionsClaim),
		rolesClaim:        c.RolesClaim,
		subjectClaim:      cmp.Or(c.SubjectClaim, DefaultSubjectClaim),
		identifiersClaims: c.IdentifiersClaims,
		logger:            o.logger,
	}
	if len(v.algorithms) == 0 {
		v.algorithms = DefaultAlgorithms()
	}
	v.algorithms = slices.Clone(v.algorithms)
	v.parser = jwt.NewParser(
		jwt.WithValidMethods(v.algorithms),
		jwt.WithIssuer(c.Issuer),
		jwt.WithAudience(c.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(c.Leeway),
		jwt.WithTimeFunc(o.clock),
		jwt.WithStrictDecoding(),
	)
	if c.JWKSFile != "" {
		data, err := readBounded(c.JWKSFile, maxJWKSBytes)
		if err != nil {
			return nil, fmt.Errorf("jwks_file: %w", err)
		}
		ks, err := parseJWKS(data)
		if err != nil {
			return nil, fmt.Errorf("jwks_file %s: %w", c.JWKSFile, err)
		}
		v.keys.Store(ks)
		return v, nil
	}
	f := &jwksFetcher{url: c.JWKSURL, client: o.httpClient}
	ks, err := f.fetch(ctx)
	if err != nil {
		return nil, err
	}
	v.keys.Store(ks)
	v.fetcher, v.refresh = f, o.refresh
	return v, nil
}

// jwtHeader is the part of the JOSE header read before verification, to
// classify the algorithm before the library sees the token.
type jwtHeader struct {
	Alg  string          `json:"alg"`
	Crit json.RawMessage `json:"crit"`
}

func (v *jwtVerifier) verify(_ context.Context, token string) (*Principal, error) {
	rawHeader, _, _ := strings.Cut(token, ".")
	hb, err := decodeB64URL(rawHeader)
	if err != nil {
		return nil, newError(MalformedCredentials, "JWT header is not base64url")
	}
	var h jwtHeader
	if err := json.Unmarshal(hb, &h); err != nil {
		return nil, newError(MalformedCredentials, "JWT header is not a JSON object")
	}
	if !slices.Contains(v.algorithms, h.Alg) {
		return nil, newError(DisallowedAlgorithm, algDetail(h.Alg))
	}
	if h.Crit != nil {
		return nil, newError(MalformedCredentials, "JWT has critical header parameters, none of which are supported")
	}
	tok, err := v.parser.Parse(token, v.keyfunc)
	if err != nil {
		return nil, classifyJWTError(tok, err)
	}
	return v.principal(tok.Claims.(jwt.MapClaims))
}

// algDetail names the refused algorithm only when it is a short token, so
// that the detail never carries arbitrary caller input.
func algDetail(alg string) string {
	if alg == "" {
		return "JWT names no algorithm"
	}
	if len(alg) <= 16 && isPermissionPart(alg) {
		return fmt.Sprintf("algorithm %q is not allowed", alg)
	}
	return "algorithm is not allowed"
}

// keyfunc picks the verification key by kid and refuses one whose type does
// not fit the token's algorithm.
func (v *jwtVerifier) keyfunc(t *jwt.Token) (any, error) {
	kid := ""
	if raw, ok := t.Header["kid"]; ok {
		s, isString := raw.(string)
		if !isString {
			return nil, errUnknownKid
		}
		kid = s
	}
	k, err := v.keys.Load().lookup(kid, t.Method.Alg())
	if err != nil {
		return nil, err
	}
	return k.key, nil
}

// classifyJWTError maps the library's errors onto Reasons. Claims errors only
// happen after the signature was verified, so reading tok's claims then is safe.
func classifyJWTError(tok *jwt.Token, err error) *Error {
	switch {
	case errors.Is(err, errUnknownKid):
		return newError(InvalidCredentials, "unknown key id")
	case errors.Is(err, errKeyDoesNotFitAlg):
		return newError(InvalidCredentials, "key does not fit the JWT algorithm")
	case errors.Is(err, jwt.ErrTokenMalformed):
		return newError(MalformedCredentials, "JWT cannot be decoded")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return newError(InvalidCredentials, "JWT signature is invalid")
	case errors.Is(err, jwt.ErrInvalidType):
		return newError(MalformedCredentials, "JWT registered claim has the wrong type")
	case errors.Is(err, jwt.ErrTokenExpired):
		return newError(ExpiredCredentials, "JWT has expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return newError(NotYetValid, "JWT nbf is in the future")
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return newError(NotYetValid, "JWT iat is in the future")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return newError(WrongAudience, "JWT aud does not name this service")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return newError(WrongIssuer, "JWT iss is not the configured issuer")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return missingClaimError(tok)
	}
	return newError(InvalidCredentials, "JWT rejected")
}

func missingClaimError(tok *jwt.Token) *Error {
	if tok != nil && tok.Claims != nil {
		if aud, _ := tok.Claims.GetAudience(); len(aud) == 0 || len(aud) == 1 && aud[0] == "" {
			return newError(WrongAudience, "JWT has no aud claim")
		}
		if iss, _ := tok.Claims.GetIssuer(); iss == "" {
			return newError(WrongIssuer, "JWT has no iss claim")
		}
	}
	return newError(InvalidCredentials, "JWT has no exp claim")
}

// principal builds the principal from verified claims.
func (v *jwtVerifier) principal(claims jwt.MapClaims) (*Principal, error) {
	sub, err := stringClaim(claims, v.subjectClaim)
	if err != nil || sub == "" {
		return nil, newError(InvalidCredentials, fmt.Sprintf("JWT has no string %q claim", v.subjectClaim))
	}
	tenant, err := stringClaim(claims, v.tenantClaim)
	switch {
	case err != nil:
		return nil, newError(InvalidCredentials, fmt.Sprintf("JWT %q claim is not a string", v.tenantClaim))
	case strings.TrimSpace(tenant) == "":
		return nil, newError(MissingTenant, fmt.Sprintf("JWT has no %q claim", v.tenantClaim))
	}
	perms, err := permissionsClaim(claims[v.permissionsClaim])
	if err != nil {
		return nil, newError(InvalidCredentials, fmt.Sprintf("JWT %q claim is neither a string nor an array of strings", v.permissionsClaim))
	}
	p := &Principal{
		Subject:     sub,
		Tenant:      tenant,
		Permissions: perms,
		Method:      MethodJWT,
		credential:  "jwt:" + v.issuer,
	}
	if v.rolesClaim != "" {
		// The roles travel in Roles to Authenticate, which grants those
		// the auth file defines.
		roles, err := permissionsClaim(claims[v.rolesClaim])
		if err != nil {
			return nil, newError(InvalidCredentials, fmt.Sprintf("JWT %q claim is neither a string nor an array of strings", v.rolesClaim))
		}
		p.Roles = roles
	}
	for _, name := range sortedKeys(v.identifiersClaims) {
		claim := v.identifiersClaims[name]
		val, err := stringClaim(claims, claim)
		if err != nil {
			return nil, newError(InvalidCredentials, fmt.Sprintf("JWT %q claim is not a string", claim))
		}
		if val == "" {
			continue
		}
		if p.Identifiers == nil {
			p.Identifiers = make(map[string]string, len(v.identifiersClaims))
		}
		p.Identifiers[name] = val
	}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		p.ExpiresAt = exp.Time
	}
	return p, nil
}

var errWrongClaimType = errors.New("wrong claim type")

// stringClaim returns claim name, "" when absent, and an error when it is
// not a string.
func stringClaim(claims jwt.MapClaims, name string) (string, error) {
	raw, ok := claims[name]
	if !ok || raw == nil {
		return "", nil
	}
	s, ok := raw.(string)
	if !ok {
		return "", errWrongClaimType
	}
	return s, nil
}

// permissionsClaim accepts a JSON array of strings or a space-separated
// string (the standard "scope" claim); absent means no permissions.
func permissionsClaim(raw any) ([]string, error) {
	switch v := raw.(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(v), nil
	case []any:
		out := make([]string, 0, len(v))
		for _, item := range v {
			s, ok := item.(string)
			if !ok {
				return nil, errWrongClaimType
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, errWrongClaimType
}
