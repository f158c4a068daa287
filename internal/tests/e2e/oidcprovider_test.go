package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/examples/upstreams/tickets/ticketsrv"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/oidcprovider"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

// TestRealOpenIDProvider: a real OpenID provider (zitadel/oidc's example
// provider, internal/tests/support/oidcprovider) issues the callers' JWTs with
// the client credentials grant; toolsvc verifies them through its JWKS
// URL and refuses a token for another audience (RFC 8707) or from another
// issuer with the same key (RFC 9207); the token exchange of an upstream
// runs against it: single-flighted, cached, a refusal UNAUTHORIZED; the
// provider stopped mid-run gives a retryable PROVIDER_ERROR to a caller
// with nothing cached, and nothing else breaks.
func TestRealOpenIDProvider(t *testing.T) {
	claims := map[string]any{"tenant": "acme", "permissions": []string{"*"}}
	clients := []oidcprovider.Client{
		{ID: "caller-a", Secret: "secret-a", Audience: []string{"toolsvc"}, Claims: claims},
		{ID: "caller-b", Secret: "secret-b", Audience: []string{"toolsvc"}, Claims: claims},
		{ID: "caller-c", Secret: "secret-c", Audience: []string{"toolsvc"}, Claims: claims},
		{ID: "caller-elsewhere", Secret: "secret-e", Audience: []string{"another-service"}, Claims: claims},
		{ID: "toolsvc", Secret: "idp-secret", Exchange: true, ExchangeAudiences: []string{"tickets-api"}},
	}
	p := oidcprovider.Start(t, oidcprovider.Options{Clients: clients})
	// Same key, another issuer: only the issuer check can refuse it.
	other := oidcprovider.Start(t, oidcprovider.Options{Clients: clients, Key: p.Key, Host: "localhost"})

	up := ticketsTrustingProvider(t, p)
	t.Setenv("IDP_SECRET", "idp-secret")
	dir := t.TempDir()
	upstreams := filepath.Join(dir, "upstreams.yaml")
	body := fmt.Sprintf("upstreams:\n  - name: tickets\n    address: %q\n    tls: {mode: plaintext}\n    timeout: 5s\n    contracts: {reflection: true}\n"+
		"    identity: {plain_headers: true}\n    token_exchange: {token_endpoint: %q, client_id: toolsvc, client_secret_env: IDP_SECRET, audience: tickets-api}\n",
		up.addr, p.TokenEndpoint())
	const apiKey = "tsk_oidc_0123456789abcdef"
	authFile := filepath.Join(dir, "auth.yaml")
	authBody := fmt.Sprintf("api_keys:\n  - key_sha256: %q\n    subject: keyed\n    tenant: acme\n    permissions: [\"*\"]\n"+
		"jwt:\n  issuer: %q\n  audience: toolsvc\n  jwks_url: %q\n  tenant_claim: tenant\n  permissions_claim: permissions\n",
		auth.HashKey(apiKey), p.Issuer, p.JWKSURL())
	for f, b := range map[string]string{upstreams: body, authFile: authBody} {
		if err := os.WriteFile(f, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) { cfg.AuthFile, cfg.UpstreamsFile = authFile, upstreams }})
	args := map[string]any{"title": "Token from a real provider", "priority": "low"}

	tokA, tokB, tokC := p.Token(t, "caller-a", "secret-a"), p.Token(t, "caller-b", "secret-b"), p.Token(t, "caller-c", "secret-c")

	// Audience and issuer (RFC 8707, RFC 9207).
	for name, tok := range map[string]string{
		"another audience": p.Token(t, "caller-elsewhere", "secret-e"),
		"another issuer":   other.Token(t, "caller-a", "secret-a"),
	} {
		for _, tr := range transportsOf(s) {
			if out := call(t, tr, tok, "create-ticket", args); out.Code != "UNAUTHORIZED" {
				t.Fatalf("%s, a token from %s: %s, want UNAUTHORIZED", tr.Name(), name, out.Code)
			}
		}
	}
	if n := p.Exchanges(); n != 0 {
		t.Fatalf("refused callers made %d exchanges", n)
	}

	// Concurrent first calls of one caller: one exchange.
	var wg sync.WaitGroup
	codes := make([]string, 8)
	for i := range codes {
		wg.Go(func() {
			out, err := transportsOf(s)[i%3].Call(t.Context(), tokB, "create-ticket", args, nil)
			if err != nil {
				codes[i] = err.Error()
				return
			}
			codes[i] = out.Code
			if out.Code != "OK" {
				codes[i] += fmt.Sprint(out.Error)
			}
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != "OK" {
			t.Fatalf("concurrent call %d: %s", i, c)
		}
	}
	if n := p.Exchanges(); n != 1 {
		t.Fatalf("8 concurrent first calls made %d exchanges, want 1", n)
	}
	// The upstream got the provider's token for it, for caller-b, with
	// toolsvc as the actor.
	checkExchanged(t, p, up.impl.LastMetadata().Get("authorization"), "caller-b")

	// Cached: a second caller exchanges once, then never again.
	if out := call(t, GRPC{S: s}, tokA, "create-ticket", args); out.Code != "OK" {
		t.Fatalf("caller-a: %s %v", out.Code, out.Error)
	}
	for _, tr := range transportsOf(s) {
		if out := call(t, tr, tokA, "create-ticket", args); out.Code != "OK" {
			t.Fatalf("%s caller-a again: %s %v", tr.Name(), out.Code, out.Error)
		}
	}
	if n := p.Exchanges(); n != 2 {
		t.Fatalf("exchanges = %d, want 2 (one per caller, then cached)", n)
	}

	// A refusal: an API-key caller's subject token is toolsvc's assertion,
	// which this provider does not trust.
	out := call(t, REST{S: s}, apiKey, "get-ticket", map[string]any{"ticketId": "TCK-000001"})
	if d, _ := out.Error["details"].(map[string]any); out.Code != "UNAUTHORIZED" || d["reason"] != "token_exchange_refused" || d["upstream"] != "tickets" {
		t.Fatalf("an exchange the provider refuses: %s %v, want UNAUTHORIZED token_exchange_refused", out.Code, out.Error)
	}

	// The provider stops mid-run.
	p.Stop()
	out = call(t, MCP{S: s}, tokC, "get-ticket", map[string]any{"ticketId": "TCK-000001"})
	if d, _ := out.Error["details"].(map[string]any); out.Code != "PROVIDER_ERROR" || out.Error["retryable"] != true || d["reason"] != "token_exchange_unavailable" {
		t.Fatalf("with the provider stopped: %s %v, want PROVIDER_ERROR retryable", out.Code, out.Error)
	}
	// A mutation too: the exchange failed before anything reached the
	// upstream.
	if out := call(t, GRPC{S: s}, tokC, "create-ticket", args); out.Code != "PROVIDER_ERROR" || out.Error["retryable"] != true {
		t.Fatalf("a mutation with the provider stopped: %s %v, want PROVIDER_ERROR retryable", out.Code, out.Error)
	}
	for _, tr := range transportsOf(s) {
		if out := call(t, tr, tokA, "create-ticket", args); out.Code != "OK" {
			t.Fatalf("%s: a cached caller with the provider stopped: %s %v", tr.Name(), out.Code, out.Error)
		}
	}
	checkExchangeAudit(t, s, p)

	resp, err := http.Get(s.HTTP + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz with the provider stopped: %d", resp.StatusCode)
	}
}

// ticketsTrustingProvider runs the example upstream as a resource server
// of the provider: every call must carry a token the provider signed for
// the audience tickets-api (and no other bearer token is accepted).
func ticketsTrustingProvider(t *testing.T, p *oidcprovider.Provider) *tickets {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	verify := func(ctx context.Context) error {
		md, _ := metadata.FromIncomingContext(ctx)
		a := md.Get("authorization")
		if len(a) != 1 {
			return status.Error(codes.Unauthenticated, "no token")
		}
		if _, err := providerClaims(p, strings.TrimPrefix(a[0], "Bearer ")); err != nil {
			return status.Error(codes.Unauthenticated, err.Error())
		}
		return nil
	}
	// Unary calls only: reflection (a stream) stays open, as toolsvc reads
	// the contracts with toolsvc's own credential.
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := verify(ctx); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}))
	impl := ticketsrv.New(ticketsrv.Options{})
	impl.Register(srv)
	if err := ticketsrv.RegisterReflection(srv); err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return &tickets{addr: lis.Addr().String(), impl: impl, srv: srv}
}

type exchangedClaims struct {
	Iss string          `json:"iss"`
	Sub string          `json:"sub"`
	Aud json.RawMessage `json:"aud"`
	Exp int64           `json:"exp"`
	Act struct {
		Sub string `json:"sub"`
	} `json:"act"`
	Tenant string `json:"tenant"`
}

// providerClaims verifies a token as the upstream's resource server does:
// the provider's signature, its issuer, the audience tickets-api, unexpired.
func providerClaims(p *oidcprovider.Provider, tok string) (*exchangedClaims, error) {
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return nil, errors.New("not a JWT")
	}
	payload, err := jws.Verify(&p.Key.PublicKey)
	if err != nil {
		return nil, errors.New("not signed by the provider")
	}
	var c exchangedClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, err
	}
	if c.Iss != p.Issuer || !strings.Contains(string(c.Aud), `"tickets-api"`) || time.Now().Unix() >= c.Exp {
		return nil, fmt.Errorf("iss %s aud %s: not for tickets-api, or expired", c.Iss, c.Aud)
	}
	return &c, nil
}

// checkExchangeAudit: every exchange made is one audit record under the
// caller (caller-b, caller-a: allowed; the API-key caller: denied;
// caller-c with the provider stopped, twice: error), naming the upstream, with
// no token in it.
func checkExchangeAudit(t *testing.T, s *testserver.Server, p *oidcprovider.Provider) {
	t.Helper()
	want := map[string]string{"caller-b": "allow/OK", "caller-a": "allow/OK", "keyed": "deny/UNAUTHORIZED", "caller-c": "error/PROVIDER_ERROR" + "error/PROVIDER_ERROR"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, _, err := s.Store().ListAudit(context.Background(), store.AuditFilter{Tenant: "acme", Tool: upstream.AuditToolTokenExchange, Limit: store.MaxAuditLimit})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range events {
			got[e.Subject] += e.Decision + "/" + e.Code
			if e.Transport != "upstream tickets" || e.TraceID == "" {
				t.Fatalf("exchange audit record: transport %q trace %q", e.Transport, e.TraceID)
			}
			for _, tok := range p.Exchanged() {
				if strings.Contains(fmt.Sprint(e), tok) || strings.Contains(fmt.Sprint(e), tok[strings.LastIndexByte(tok, '.')+1:]) {
					t.Fatal("an audit record holds an exchanged token")
				}
			}
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("exchange audit records by subject: %v, want %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkExchanged verifies that the upstream received a token the provider
// signed, for the upstream's audience, naming the caller and toolsvc.
func checkExchanged(t *testing.T, p *oidcprovider.Provider, authz []string, subject string) {
	t.Helper()
	if len(authz) != 1 || !strings.HasPrefix(authz[0], "Bearer ") {
		t.Fatalf("the upstream got authorization %d values", len(authz))
	}
	tok := strings.TrimPrefix(authz[0], "Bearer ")
	c, err := providerClaims(p, tok)
	if err != nil {
		t.Fatalf("the forwarded token: %v", err)
	}
	if c.Sub != subject || c.Act.Sub != "toolsvc" || c.Tenant != "acme" {
		t.Fatalf("exchanged token claims: sub %s act %s tenant %s", c.Sub, c.Act.Sub, c.Tenant)
	}
	found := false
	for _, e := range p.Exchanged() {
		found = found || e == tok
	}
	if !found {
		t.Fatal("the forwarded token is not one the provider issued by exchange")
	}
}
