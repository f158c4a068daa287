package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolsvc/toolsvc/examples/upstreams/tickets/ticketsrv"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestUpstreamTokenExchange: through the whole server, an upstream with
// token_exchange gets the token its authorization server issued for the
// caller, never toolsvc's static credential: the subject token is the
// caller's own JWT when it brought one, else toolsvc's signed assertion;
// with the token endpoint stopped, a caller with nothing cached gets a
// retryable PROVIDER_ERROR and a cached caller goes on.
func TestUpstreamTokenExchange(t *testing.T) {
	const exchanged = "exchanged-for-tickets"
	var (
		mu       sync.Mutex
		subjects []string
	)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		subjects = append(subjects, r.Form.Get("subject_token"))
		mu.Unlock()
		if id, secret, _ := r.BasicAuth(); id != "toolsvc" || secret != "idp-secret" || r.Form.Get("audience") != "tickets-api" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":300}`, exchanged)
	}))
	up := startTickets(t, ticketsOpts{opts: ticketsrv.Options{Token: exchanged}})
	t.Setenv("IDP_SECRET", "idp-secret")
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	body := fmt.Sprintf("upstreams:\n  - name: tickets\n    address: %q\n    tls: {mode: plaintext}\n    timeout: 5s\n    contracts: {reflection: true}\n"+
		"    identity: {plain_headers: true}\n    token_exchange: {token_endpoint: %q, client_id: toolsvc, client_secret_env: IDP_SECRET, audience: tickets-api, scopes: [tickets]}\n",
		up.addr, idp.URL+"/oauth/token")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testserver.WriteCredentials(t)
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) { cfg.AuthFile, cfg.UpstreamsFile = c.AuthFile, file }})
	args := map[string]any{"title": "Exchanged token works", "priority": "low"}
	last := func() string { mu.Lock(); defer mu.Unlock(); return subjects[len(subjects)-1] }

	if out := call(t, GRPC{S: s}, c.Full, "create-ticket", args); out.Code != "OK" {
		t.Fatalf("API key caller: %s %v", out.Code, out.Error)
	}
	if a := last(); strings.Count(a, ".") != 2 || a == c.Full {
		t.Fatalf("subject token of an API key caller = %.40q, want toolsvc's assertion", a)
	}
	if out := call(t, MCP{S: s}, c.JWT, "create-ticket", args); out.Code != "OK" {
		t.Fatalf("JWT caller: %s %v", out.Code, out.Error)
	}
	if last() != c.JWT {
		t.Fatal("the subject token of a JWT caller is not its JWT")
	}
	n := len(subjects)
	for _, tr := range transportsOf(s) {
		if out := call(t, tr, c.Full, "create-ticket", args); out.Code != "OK" {
			t.Fatalf("%s: %s %v", tr.Name(), out.Code, out.Error)
		}
	}
	if len(subjects) != n {
		t.Fatalf("cached tokens were exchanged again: %d exchanges, want %d", len(subjects), n)
	}
	idp.Close()
	// A query and a mutation without an idempotency key alike: the
	// exchange failed before anything reached the upstream, so retrying is
	// safe (toolerr's BeforeEffect).
	out := call(t, REST{S: s}, c.OtherTenant, "get-ticket", map[string]any{"ticketId": "TCK-000001"})
	if out.Code != "PROVIDER_ERROR" || out.Error["retryable"] != true || out.Error["details"].(map[string]any)["reason"] != "token_exchange_unavailable" {
		t.Fatalf("with the token endpoint stopped: %s %v, want PROVIDER_ERROR retryable", out.Code, out.Error)
	}
	if out := call(t, GRPC{S: s}, c.OtherTenant, "create-ticket", args); out.Code != "PROVIDER_ERROR" || out.Error["retryable"] != true {
		t.Fatalf("a mutation with the token endpoint stopped: %s %v, want PROVIDER_ERROR retryable", out.Code, out.Error)
	}
	if out := call(t, GRPC{S: s}, c.Full, "create-ticket", args); out.Code != "OK" {
		t.Fatalf("a cached caller while the endpoint is stopped: %s %v", out.Code, out.Error)
	}
	if md := up.impl.LastMetadata(); md.Get("authorization")[0] != "Bearer "+exchanged {
		t.Fatalf("the upstream got %v", md.Get("authorization"))
	}
}
