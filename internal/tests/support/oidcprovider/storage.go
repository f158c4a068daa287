package oidcprovider

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// wrapped is the example storage with the test's clients, its signing
// key, JWT access tokens, and a token exchange that accepts the
// provider's own JWTs as subject tokens (token type jwt, which the
// example storage leaves to a verifier).
type wrapped struct {
	*storage.Storage
	clients   map[string]*Client
	key       *signingKey
	issuer    string
	ttl       time.Duration
	trust     map[string]crypto.PublicKey
	exchanges atomic.Int64
}

var (
	_ op.ClientCredentialsStorage           = (*wrapped)(nil)
	_ op.TokenExchangeStorage               = (*wrapped)(nil)
	_ op.TokenExchangeTokensVerifierStorage = (*wrapped)(nil)
)

func (s *wrapped) client(id, secret string) (*Client, error) {
	c, ok := s.clients[id]
	if !ok || c.Secret != secret {
		return nil, errors.New("wrong client or secret")
	}
	return c, nil
}

func (s *wrapped) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	c, err := s.client(id, secret)
	if err != nil {
		return nil, err
	}
	return &opClient{c: c, ttl: s.ttl}, nil
}

func (s *wrapped) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	c, ok := s.clients[id]
	if !ok {
		return nil, errors.New("unknown client")
	}
	return &oidc.JWTTokenRequest{Subject: c.ID, Audience: c.Audience, Scopes: scopes}, nil
}

func (s *wrapped) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	if c, ok := s.clients[id]; ok {
		return &opClient{c: c, ttl: s.ttl}, nil
	}
	return s.Storage.GetClientByClientID(ctx, id)
}

func (s *wrapped) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	_, err := s.client(id, secret)
	return err
}

// GetPrivateClaimsFromScopes adds the client's claims to its client
// credentials tokens.
func (s *wrapped) GetPrivateClaimsFromScopes(_ context.Context, userID, clientID string, _ []string) (map[string]any, error) {
	if c, ok := s.clients[clientID]; ok && userID == clientID {
		return c.Claims, nil
	}
	return nil, nil
}

// ValidateTokenExchangeRequest admits an exchange by a client allowed to
// exchange, for one of its audiences, of a token this provider issued.
func (s *wrapped) ValidateTokenExchangeRequest(_ context.Context, r op.TokenExchangeRequest) error {
	s.exchanges.Add(1)
	c, ok := s.clients[r.GetClientID()]
	if !ok || !c.Exchange {
		return oidc.ErrUnauthorizedClient().WithDescription("client may not exchange tokens")
	}
	if len(r.GetAudience()) == 0 {
		return oidc.ErrInvalidTarget().WithDescription("audience required")
	}
	for _, a := range r.GetAudience() {
		if !slices.Contains(c.ExchangeAudiences, a) {
			return oidc.ErrInvalidTarget().WithDescription("audience not allowed")
		}
	}
	if r.GetRequestedTokenType() == "" {
		r.SetRequestedTokenType(oidc.AccessTokenType)
	}
	r.SetCurrentScopes(r.GetScopes())
	return nil
}

func (s *wrapped) CreateTokenExchangeRequest(context.Context, op.TokenExchangeRequest) error {
	return nil
}

// GetPrivateClaimsFromTokenExchangeRequest carries the subject token's
// tenant and names the exchanging client as the actor (RFC 8693 §4.1).
func (s *wrapped) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, r op.TokenExchangeRequest) (map[string]any, error) {
	claims := map[string]any{"act": map[string]any{"sub": r.GetClientID()}}
	if t, ok := r.GetExchangeSubjectTokenClaims()["tenant"]; ok {
		claims["tenant"] = t
	}
	return claims, nil
}

// VerifyExchangeSubjectToken accepts a JWT this provider signed, or one
// of a trusted issuer, unexpired.
func (s *wrapped) VerifyExchangeSubjectToken(_ context.Context, token string, _ oidc.TokenType) (string, string, map[string]any, error) {
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA})
	if err != nil {
		return "", "", nil, err
	}
	unverified := &oidc.AccessTokenClaims{}
	if err := unverified.UnmarshalJSON(jws.UnsafePayloadWithoutVerification()); err != nil {
		return "", "", nil, err
	}
	var key crypto.PublicKey = &s.key.key.PublicKey
	if unverified.Issuer != s.issuer {
		if key = s.trust[unverified.Issuer]; key == nil {
			return "", "", nil, errors.New("not a trusted issuer")
		}
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return "", "", nil, err
	}
	claims := &oidc.AccessTokenClaims{}
	if err := claims.UnmarshalJSON(payload); err != nil {
		return "", "", nil, err
	}
	if time.Now().After(claims.Expiration.AsTime()) {
		return "", "", nil, errors.New("expired")
	}
	return token, claims.Subject, claims.Claims, nil
}

func (s *wrapped) VerifyExchangeActorToken(context.Context, string, oidc.TokenType) (string, string, map[string]any, error) {
	return "", "", nil, errors.New("actor tokens are not accepted")
}

func (s *wrapped) SigningKey(context.Context) (op.SigningKey, error) { return s.key, nil }

func (s *wrapped) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.ES256}, nil
}

func (s *wrapped) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{&publicKey{signingKey: s.key}}, nil
}

// signingKey is the provider's ES256 key, as op.SigningKey and op.Key.
type signingKey struct {
	id  string
	key *ecdsa.PrivateKey
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.ES256 }
func (k *signingKey) Algorithm() jose.SignatureAlgorithm          { return jose.ES256 }
func (k *signingKey) ID() string                                  { return k.id }
func (k *signingKey) Use() string                                 { return "sig" }

func (k *signingKey) Key() any { return k.key }

// publicKey is what KeySet publishes: the public half only.
type publicKey struct{ *signingKey }

func (k *publicKey) Key() any { return &k.key.PublicKey }

// opClient is a Client as op sees it: a confidential service client
// whose access tokens are JWTs.
type opClient struct {
	c   *Client
	ttl time.Duration
}

func (c *opClient) GetID() string                       { return c.c.ID }
func (c *opClient) RedirectURIs() []string              { return nil }
func (c *opClient) PostLogoutRedirectURIs() []string    { return nil }
func (c *opClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *opClient) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *opClient) ResponseTypes() []oidc.ResponseType  { return nil }
func (c *opClient) GrantTypes() []oidc.GrantType {
	g := []oidc.GrantType{oidc.GrantTypeClientCredentials}
	if c.c.Exchange {
		g = append(g, oidc.GrantTypeTokenExchange)
	}
	return g
}
func (c *opClient) LoginURL(string) string               { return "" }
func (c *opClient) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *opClient) IDTokenLifetime() time.Duration       { return c.ttl }
func (c *opClient) DevMode() bool                        { return false }
func (c *opClient) IsScopeAllowed(string) bool           { return true }
func (c *opClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *opClient) ClockSkew() time.Duration             { return 0 }
func (c *opClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *opClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
