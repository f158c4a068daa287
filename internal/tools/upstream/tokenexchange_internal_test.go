package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// tokenServer is an RFC 8693 token endpoint that checks the client's
// credentials and the request, answers a token per subject token, and
// can refuse or fail.
func tokenServer(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int64, *atomic.Value) {
	t.Helper()
	var n atomic.Int64
	var mode atomic.Value
	mode.Store("ok")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		time.Sleep(delay)
		id, secret, _ := r.BasicAuth()
		_ = r.ParseForm()
		switch {
		case id != "toolsvc" || secret != "client-secret":
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
		case mode.Load() == "refuse":
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant","error_description":"subject token `+r.Form.Get("subject_token")+` not allowed"}`)
		case mode.Load() == "fail":
			w.WriteHeader(http.StatusBadGateway)
		case r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" || r.Form.Get("audience") != "hr-api" ||
			r.Form.Get("scope") != "hr.read" || r.Form.Get("subject_token_type") != tokenTypeJWT:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_request"}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":"xchg-%s","token_type":"Bearer","issued_token_type":"%s","expires_in":120}`, r.Form.Get("subject_token"), tokenTypeAccess)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n, &mode
}

// TestTokenExchange: exchanged tokens are cached per caller until shortly
// before they expire, concurrent exchanges are one request, a refusal is
// UNAUTHORIZED without the server's text, an endpoint that fails or is
// down is PROVIDER_ERROR (retryable), and the result goes to the upstream
// as its authorization.
func TestTokenExchange(t *testing.T) {
	srv, n, mode := tokenServer(t, 50*time.Millisecond)
	t.Setenv("HR_CLIENT_SECRET", "client-secret")
	cfg := &TokenExchangeConfig{TokenEndpoint: srv.URL, ClientID: "toolsvc", ClientSecretEnv: "HR_CLIENT_SECRET", Audience: "hr-api", Scopes: []string{"hr.read"}}
	if errs := cfg.complete(); len(errs) > 0 {
		t.Fatal(errs)
	}
	u := &Upstream{cfg: Config{Name: "hr", TokenExchange: cfg}, set: &Set{}}
	now := time.Now()
	x := u.set.callers.exchanger(u)
	x.now = func() time.Time { return now }
	authz := func(tenant, subject, jwt string) (string, error) {
		ctx := callctx.WithSubjectToken(t.Context(), jwt)
		md := metadata.MD{}
		if err := u.authorize(ctx, &callctx.Facts{Tenant: tenant, Subject: subject}, md); err != nil {
			return "", err
		}
		return md.Get("authorization")[0], nil
	}

	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() { got[i], _ = authz("acme", "alice", "jwt-alice") })
	}
	wg.Wait()
	for _, g := range got {
		if g != "Bearer xchg-jwt-alice" {
			t.Fatalf("authorization = %q, want the exchanged token", g)
		}
	}
	if n.Load() != 1 {
		t.Fatalf("8 concurrent calls made %d exchanges, want 1", n.Load())
	}
	if g, _ := authz("acme", "alice", "jwt-alice-2"); g != "Bearer xchg-jwt-alice" || n.Load() != 1 {
		t.Fatalf("a second call exchanged again (%d) or got %q", n.Load(), g)
	}
	if g, _ := authz("acme", "bob", "jwt-bob"); g != "Bearer xchg-jwt-bob" || n.Load() != 2 {
		t.Fatalf("another caller got %q (%d exchanges)", g, n.Load())
	}
	now = now.Add(100 * time.Second) // within 30 s of the 120 s expiry
	if g, _ := authz("acme", "alice", "jwt-alice-3"); g != "Bearer xchg-jwt-alice-3" || n.Load() != 3 {
		t.Fatalf("a token about to expire was used: %q (%d exchanges)", g, n.Load())
	}

	mode.Store("refuse")
	_, err := authz("acme", "carol", "jwt-carol")
	var te *toolerr.Error
	if !errors.As(err, &te) || te.Code != toolerr.Unauthorized || (te.Code.Retryable() && !te.Final) || te.Details["oauth_error"] != "invalid_grant" {
		t.Fatalf("a refusal = %v, want UNAUTHORIZED invalid_grant, not retryable", err)
	}
	if strings.Contains(err.Error(), "jwt-carol") || strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("the refusal quotes the token or the server's text: %v", err)
	}
	mode.Store("fail")
	if _, err := authz("acme", "dave", "jwt-dave"); !errors.As(err, &te) || te.Code != toolerr.ProviderError || !(te.Code.Retryable() && !te.Final) {
		t.Fatalf("a failing endpoint = %v, want PROVIDER_ERROR retryable", err)
	}
	srv.Close()
	if _, err := authz("acme", "erin", "jwt-erin"); !errors.As(err, &te) || te.Code != toolerr.ProviderError || !(te.Code.Retryable() && !te.Final) {
		t.Fatalf("a stopped endpoint = %v, want PROVIDER_ERROR retryable", err)
	}
	if g, err := authz("acme", "alice", "jwt-alice-4"); err != nil || g != "Bearer xchg-jwt-alice-3" {
		t.Fatalf("a cached token stops working when the endpoint is down: %q %v", g, err)
	}
}
