package oidcprovider

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func exchange(t *testing.T, p *Provider, subject, audience string) (int, map[string]any) {
	t.Helper()
	form := url.Values{
		"grant_type":           {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token":        {subject},
		"subject_token_type":   {"urn:ietf:params:oauth:token-type:jwt"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"audience":             {audience},
	}
	req, _ := http.NewRequest(http.MethodPost, p.TokenEndpoint(), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("svc", "svc-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(body, &out)
	return resp.StatusCode, out
}

// TestProvider: client credentials give a JWT; the exchanging client
// exchanges it for an allowed audience only; a token of no provider is
// refused with an OAuth error (400).
func TestProvider(t *testing.T) {
	p := Start(t, Options{Clients: []Client{
		{ID: "caller", Secret: "s", Audience: []string{"toolsvc"}, Claims: map[string]any{"tenant": "acme"}},
		{ID: "svc", Secret: "svc-secret", Exchange: true, ExchangeAudiences: []string{"api"}},
	}})
	tok := p.Token(t, "caller", "s")
	if strings.Count(tok, ".") != 2 {
		t.Fatalf("client credentials token is no JWT: %.20q", tok)
	}
	code, out := exchange(t, p, tok, "api")
	if code != http.StatusOK || out["access_token"] == nil {
		t.Fatalf("exchange: %d %v", code, out)
	}
	if got := p.Exchanged(); len(got) != 1 || got[0] != out["access_token"] {
		t.Fatalf("exchanged tokens recorded: %d", len(got))
	}
	if code, out := exchange(t, p, tok, "elsewhere"); code != http.StatusBadRequest || out["error"] != "invalid_target" {
		t.Fatalf("another audience: %d %v", code, out)
	}
	if code, out := exchange(t, p, "a.b.c", "api"); code != http.StatusBadRequest || out["error"] != "invalid_request" {
		t.Fatalf("a token of no provider: %d %v", code, out)
	}
	if p.Exchanges() != 2 {
		t.Fatalf("exchanges validated = %d, want 2", p.Exchanges())
	}
}
