package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	ticketsv1 "github.com/toolsvc/toolsvc/examples/upstreams/tickets/gen/tickets/v1"
	"github.com/toolsvc/toolsvc/examples/upstreams/tickets/ticketsrv"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

// verifyingTickets starts the example gRPC upstream taking the caller only
// from toolsvc's signed assertion, and toolsvc in front of it without the
// plain headers; the upstream verifies against toolsvc's JWKS URL.
func verifyingTickets(t *testing.T, configure func(*server.Config)) (*tickets, *testserver.Server, *testserver.Credentials, *ticketsrv.Verifier) {
	t.Helper()
	v := &ticketsrv.Verifier{Audience: "tickets"}
	up := startTickets(t, ticketsOpts{opts: ticketsrv.Options{Verifier: v}})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(ticketsToken), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "upstreams.yaml")
	body := fmt.Sprintf("upstreams:\n  - name: tickets\n    address: %q\n    tls: {mode: plaintext}\n    credential: {bearer_file: token}\n    timeout: 5s\n    contracts: {reflection: true}\n", up.addr)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testserver.WriteCredentials(t)
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) {
		cfg.AuthFile, cfg.UpstreamsFile = c.AuthFile, file
		if configure != nil {
			configure(cfg)
		}
	}})
	v.JWKSURL, v.Issuer = s.HTTP+"/.well-known/jwks.json", s.Config.PublicURL
	return up, s, c, v
}

// TestUpstreamVerifiesIdentity: a gRPC upstream learns the caller only
// from toolsvc's signed assertion, verified with go-jose against
// /.well-known/jwks.json, and acts on its claims (tenant, subject, the
// permission that admitted the call); forged, expired, other-audience and
// altered assertions, and none, are refused by it.
func TestUpstreamVerifiesIdentity(t *testing.T) {
	up, s, c, v := verifyingTickets(t, nil)

	var assertion string
	for _, tr := range transportsOf(s) {
		out := call(t, tr, c.Full, "create-ticket", map[string]any{"title": "Export button fails", "priority": "high"})
		if out.Code != "OK" {
			t.Fatalf("%s create-ticket: %s %v", tr.Name(), out.Code, out.Error)
		}
		ticket := out.Result["data"].(map[string]any)["ticket"].(map[string]any)
		if ticket["tenant"] != "acme" || ticket["openedBy"] != "full" {
			t.Fatalf("%s: ticket = %v, want tenant acme opened by full (from the assertion)", tr.Name(), ticket)
		}
		md := up.impl.LastMetadata()
		for _, k := range []string{"x-toolsvc-tenant", "x-toolsvc-subject", "x-toolsvc-transport", "x-toolsvc-user-id"} {
			if len(md.Get(k)) != 0 {
				t.Fatalf("%s: the upstream got the plain %s, which no operator turned on", tr.Name(), k)
			}
		}
		assertion = md.Get(upstream.MDIdentity)[0]
		id, err := v.Verify(t.Context(), assertion)
		if err != nil {
			t.Fatal(err)
		}
		if id.Tool != "create-ticket@1.0.0" || strings.Join(id.Permissions, " ") != "tickets:write" || id.TraceID == "" {
			t.Fatalf("%s: claims = %+v: want the tool, only the permission that admitted it, a trace id", tr.Name(), id)
		}
		id2 := ticket["id"].(string)
		if out := call(t, tr, c.OtherTenant, "get-ticket", map[string]any{"ticketId": id2}); out.Code != "NOT_FOUND" {
			t.Fatalf("%s: another tenant read acme's ticket: %s", tr.Name(), out.Code)
		}
		if out := call(t, tr, c.Full, "get-ticket", map[string]any{"ticketId": id2}); out.Code != "OK" {
			t.Fatalf("%s: get-ticket: %s %v", tr.Name(), out.Code, out.Error)
		}
	}
	var claims map[string]any
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(assertion, ".")[1])
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"iss", "aud", "sub", "tenant", "permissions", "tool", "jti", "iat", "exp", "trace_id"} {
		if _, ok := claims[k]; !ok {
			t.Errorf("the assertion has no %s: %v", k, claims)
		}
	}
	if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat != 60 {
		t.Errorf("exp - iat = %v, want the default 60s", exp-iat)
	}

	// Straight to the upstream, past toolsvc: every assertion but a valid
	// one for this audience is refused.
	conn, err := grpc.NewClient(up.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	direct := ticketsv1.NewTicketServiceClient(conn)
	try := func(assertion string) codes.Code {
		md := metadata.Pairs("authorization", "Bearer "+ticketsToken, "x-toolsvc-tenant", "acme", "x-toolsvc-subject", "full")
		if assertion != "" {
			md.Set(upstream.MDIdentity, assertion)
		}
		_, err := direct.CreateTicket(metadata.NewOutgoingContext(t.Context(), md), &ticketsv1.CreateTicketRequest{Title: "Direct call past toolsvc", Priority: "low"})
		return status.Code(err)
	}
	if got := try(assertion); got != codes.OK {
		t.Fatalf("replaying a valid assertion within its minute: %s (replay within exp is the TTL's to bound)", got)
	}
	keys := s.Store().(store.SigningKeyStore)
	signAs := func(now time.Time, mutate func(*upstream.Claims)) string {
		t.Helper()
		id, err := upstream.NewIdentity(keys, s.Config.PublicURL, upstream.WithIdentityClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		c := &upstream.Claims{Audience: "tickets", Subject: "full", Tenant: "acme", Permissions: []string{"tickets:write"},
			IssuedAt: now.Unix(), NotBefore: now.Unix(), Expiry: now.Add(time.Minute).Unix()}
		mutate(c)
		a, err := id.Sign(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	parts := strings.Split(assertion, ".")
	altered := strings.Replace(string(payload), `"tenant":"acme"`, `"tenant":"globex"`, 1)
	_, forger, _ := ed25519.GenerateKey(rand.Reader)
	forged := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(forger, []byte(parts[0]+"."+parts[1])))
	for _, c := range []struct {
		name, assertion string
		want            codes.Code
	}{
		{"none", "", codes.Unauthenticated},
		{"signed by another key under toolsvc's kid", forged, codes.Unauthenticated},
		{"altered tenant", parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(altered)) + "." + parts[2], codes.Unauthenticated},
		{"expired", signAs(time.Now().Add(-2*time.Minute), func(*upstream.Claims) {}), codes.Unauthenticated},
		{"for another audience", signAs(time.Now(), func(c *upstream.Claims) { c.Audience = "deploys" }), codes.Unauthenticated},
		{"from another issuer", signWithIssuer(t, keys, "https://evil.example"), codes.Unauthenticated},
		{"without the permission", signAs(time.Now(), func(c *upstream.Claims) { c.Permissions = []string{"tickets:read"} }), codes.PermissionDenied},
		{"valid", signAs(time.Now(), func(*upstream.Claims) {}), codes.OK},
	} {
		if got := try(c.assertion); got != c.want {
			t.Errorf("%s: the upstream answered %s, want %s", c.name, got, c.want)
		}
	}
}

func signWithIssuer(t *testing.T, keys store.SigningKeyStore, issuer string) string {
	t.Helper()
	id, err := upstream.NewIdentity(keys, issuer)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a, err := id.Sign(t.Context(), &upstream.Claims{Audience: "tickets", Subject: "full", Tenant: "acme", Permissions: []string{"tickets:write"},
		IssuedAt: now.Unix(), NotBefore: now.Unix(), Expiry: now.Add(time.Minute).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestIdentityKeyRotationUnderLoad: with keys rotating every two seconds,
// calls made without pause for three periods all pass the upstream's
// verification, which caches the key set and fetches it again only for
// a key it does not hold; several keys signed them.
func TestIdentityKeyRotationUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for seven seconds")
	}
	up, s, c, _ := verifyingTickets(t, func(cfg *server.Config) { cfg.IdentityKeyRotation = 2 * time.Second })
	var (
		calls, failed atomic.Int64
		kids          sync.Map
		wg            sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(t.Context(), 7*time.Second)
	defer cancel()
	// Three callers, a call every 250 ms each: under the tool's rate limit
	// (120 a minute), and several calls in every period.
	for range 3 {
		wg.Go(func() {
			for ctx.Err() == nil {
				time.Sleep(250 * time.Millisecond)
				out, err := (GRPC{S: s}).Call(context.WithoutCancel(ctx), c.Full, "create-ticket", map[string]any{"title": "Rotation under load", "priority": "low"}, nil)
				calls.Add(1)
				if err != nil || out.Code != "OK" {
					if failed.Add(1) < 3 {
						t.Logf("call failed: %v %s %v", err, out.Code, out.Error)
					}
					continue
				}
				if a := up.impl.LastMetadata().Get(upstream.MDIdentity); len(a) == 1 {
					h, _ := base64.RawURLEncoding.DecodeString(strings.Split(a[0], ".")[0])
					var head struct{ Kid string }
					_ = json.Unmarshal(h, &head)
					kids.Store(head.Kid, true)
				}
			}
		})
	}
	wg.Wait()
	n := 0
	kids.Range(func(any, any) bool { n++; return true })
	if failed.Load() > 0 || calls.Load() < 40 || n < 3 {
		t.Fatalf("%d of %d calls failed across %d keys; want none failed, at least 40 calls, at least 3 keys", failed.Load(), calls.Load(), n)
	}
	t.Logf("%d calls, %d keys, none failed", calls.Load(), n)
}

// TestIdentityKeysArePublished: the JWKS and the discovery document naming
// it are anonymous, cacheable, hold public keys only, and pass the Host
// guard like the probes (a route behind it answers 403 to the same Host).
func TestIdentityKeysArePublished(t *testing.T) {
	s := testserver.New(t, testserver.Options{})
	get := func(path, host string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.HTTP+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	if resp, _ := get("/v1/tools", "rebound.example"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a guarded route with a foreign Host = %d, want 403 (the guard is on)", resp.StatusCode)
	}
	resp, body := get("/.well-known/jwks.json", "rebound.example")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Cache-Control"), "public, max-age=") {
		t.Fatalf("JWKS = %d %q: %s", resp.StatusCode, resp.Header.Get("Cache-Control"), body)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil || len(set.Keys) != 2 {
		t.Fatalf("JWKS %s: want the current and the next key", body)
	}
	for _, k := range set.Keys {
		if k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["alg"] != "EdDSA" || k["kid"] == "" || k["d"] != nil {
			t.Errorf("key %v: want a public Ed25519 key with a kid", k)
		}
	}
	resp, body = get("/.well-known/openid-configuration", "rebound.example")
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("discovery = %d %s", resp.StatusCode, body)
	}
	if doc["issuer"] != s.Config.PublicURL || doc["jwks_uri"] != s.Config.PublicURL+"/.well-known/jwks.json" {
		t.Errorf("discovery = %v", doc)
	}
}
