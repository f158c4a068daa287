package client

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Token is a bearer credential (an API key or a JWT) and when it expires.
type Token struct {
	// Value is sent as "authorization: Bearer <Value>".
	Value string
	// Expiry is when the token stops being valid; zero means never (an
	// API key).
	Expiry time.Time
}

// TokenSource supplies the bearer token of each call, e.g. a JWT from an
// identity provider. The client asks it again only when the token it holds
// is about to expire (a minute before Expiry) or the server refused it, so
// a source may fetch a new token on every call to Token. An
// oauth2.TokenSource fits in three lines:
//
//	client.TokenSourceFunc(func(context.Context) (client.Token, error) {
//		t, err := ts.Token()
//		if err != nil {
//			return client.Token{}, err
//		}
//		return client.Token{Value: t.AccessToken, Expiry: t.Expiry}, nil
//	})
type TokenSource interface {
	Token(ctx context.Context) (Token, error)
}

// TokenSourceFunc is a function that is a [TokenSource].
type TokenSourceFunc func(ctx context.Context) (Token, error)

// Token calls f.
func (f TokenSourceFunc) Token(ctx context.Context) (Token, error) { return f(ctx) }

// expiryMargin is how long before its Expiry a token is replaced, so that
// it does not expire on its way to the server.
const expiryMargin = time.Minute

// bearer is the per-RPC credential of a Client: a static token, or a
// TokenSource whose token is cached until it nears its expiry or the
// server refuses it.
type bearer struct {
	static     string
	source     TokenSource
	requireTLS bool

	mu     sync.Mutex
	cached Token
}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b *bearer) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	tok := b.static
	if b.source != nil {
		t, err := b.token(ctx)
		if err != nil {
			return nil, err
		}
		tok = t
	}
	return map[string]string{HeaderAuthorization: "Bearer " + tok}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials: a
// token is sent in plaintext only over a connection made with
// [WithInsecure].
func (b *bearer) RequireTransportSecurity() bool { return b.requireTLS }

// token returns the cached token, or a new one from the source.
func (b *bearer) token(ctx context.Context) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cached.Value != "" && (b.cached.Expiry.IsZero() || time.Until(b.cached.Expiry) > expiryMargin) {
		return b.cached.Value, nil
	}
	t, err := b.source.Token(ctx)
	if err != nil {
		return "", err
	}
	if t.Value == "" {
		return "", errors.New("client: the token source returned an empty token")
	}
	b.cached = t
	return t.Value, nil
}

// refreshable reports whether a refused token can be replaced (it came
// from a source).
func (b *bearer) refreshable() bool { return b != nil && b.source != nil }

// forget drops the cached token, so that the next call asks the source.
func (b *bearer) forget() {
	b.mu.Lock()
	b.cached = Token{}
	b.mu.Unlock()
}
