// Package oidcprovider starts a real OpenID provider for tests: the
// example provider of github.com/zitadel/oidc/v3 (its op package, served
// by exampleop.SetupServer over the example's in-memory storage), on a
// loopback port, with clients the test names. Callers get JWT access
// tokens from it with the client credentials grant; toolsvc verifies them
// through its JWKS URL and exchanges them at its token endpoint (RFC
// 8693). Test support only: product code never imports it
// (internal/tests/layering).
package oidcprovider

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// Client is a client of the provider.
type Client struct {
	ID, Secret string
	// Audience is the aud of the tokens it gets with client credentials.
	Audience []string
	// Claims are added to those tokens (tenant, permissions…).
	Claims map[string]any
	// Exchange lets it exchange tokens (RFC 8693): toolsvc's client.
	Exchange bool
	// ExchangeAudiences are the audiences it may ask an exchanged token
	// for; any other is refused (invalid_target).
	ExchangeAudiences []string
}

// Options configure a provider.
type Options struct {
	Clients []Client
	// Key signs the tokens (ES256); nil: a new one. Two providers given one
	// key differ only by their issuer.
	Key *ecdsa.PrivateKey
	// Host is the issuer's host name; "" is 127.0.0.1 (localhost makes a
	// second issuer on the same loopback address space).
	Host string
	// TokenTTL is the lifetime of access tokens; 0 is 5 minutes.
	TokenTTL time.Duration
	// Trust are other issuers whose JWTs it accepts as subject tokens of
	// a token exchange, by issuer: their public key (ES256 or EdDSA).
	Trust map[string]crypto.PublicKey
}

// Provider is a running provider.
type Provider struct {
	srv     *httptest.Server
	st      *wrapped
	Issuer  string
	Key     *ecdsa.PrivateKey
	mu      sync.Mutex
	issued  []string // access tokens issued by token exchange
	stopped bool
}

// Start starts a provider on a loopback port; it stops with the test.
func Start(t testing.TB, o Options) *Provider {
	t.Helper()
	if o.Key == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		o.Key = k
	}
	if o.TokenTTL == 0 {
		o.TokenTTL = 5 * time.Minute
	}
	srv := httptest.NewUnstartedServer(nil)
	port := srv.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndexByte(port, ':')+1:]
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	issuer := "http://" + host + ":" + port
	p := &Provider{srv: srv, Issuer: issuer, Key: o.Key}
	p.st = &wrapped{
		Storage: storage.NewStorageWithClients(storage.NewUserStore(issuer), map[string]*storage.Client{}),
		clients: map[string]*Client{},
		key:     &signingKey{id: keyID(o.Key), key: o.Key},
		issuer:  issuer,
		ttl:     o.TokenTTL,
		trust:   o.Trust,
	}
	for i := range o.Clients {
		c := o.Clients[i]
		p.st.clients[c.ID] = &c
	}
	router := exampleop.SetupServer(issuer, p.st, nil, false)
	srv.Config.Handler = p.record(router)
	srv.Start()
	t.Cleanup(p.Stop)
	return p
}

// Stop stops the provider (its port then refuses connections).
func (p *Provider) Stop() {
	p.mu.Lock()
	done := p.stopped
	p.stopped = true
	p.mu.Unlock()
	if !done {
		p.srv.CloseClientConnections()
		p.srv.Close()
	}
}

// TokenEndpoint is the provider's token endpoint.
func (p *Provider) TokenEndpoint() string { return p.Issuer + "/oauth/token" }

// JWKSURL is where its keys are published.
func (p *Provider) JWKSURL() string { return p.Issuer + "/keys" }

// Exchanges is how many token exchanges it has answered, granted or not.
func (p *Provider) Exchanges() int { return int(p.st.exchanges.Load()) }

// Exchanged are the access tokens it issued by token exchange.
func (p *Provider) Exchanged() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.issued)
}

// Token gets an access token with the client credentials grant, as a
// caller does.
func (p *Provider) Token(t testing.TB, clientID, secret string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"openid"}}
	req, err := http.NewRequest(http.MethodPost, p.TokenEndpoint(), strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || out.AccessToken == "" {
		t.Fatalf("client credentials for %s: %d %s", clientID, resp.StatusCode, body)
	}
	return out.AccessToken
}

// record keeps the access tokens of token exchange answers, so that a
// test can look for them where they must not be.
func (p *Provider) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/oauth/token" || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		if form.Get("grant_type") != string(oidc.GrantTypeTokenExchange) {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var out struct {
			AccessToken string `json:"access_token"`
		}
		if json.Unmarshal(rec.Body.Bytes(), &out) == nil && out.AccessToken != "" {
			p.mu.Lock()
			p.issued = append(p.issued, out.AccessToken)
			p.mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

func keyID(k *ecdsa.PrivateKey) string {
	jwk := jose.JSONWebKey{Key: k.Public()}
	sum, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("%x", sum[:8])
}
