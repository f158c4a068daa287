package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

// TestMCPUpstreamVerifiesIdentity: the example MCP server (mcp-go, its own
// process) takes the caller only from toolsvc's signed assertion in the
// call's _meta, verified with go-jose against toolsvc's JWKS, and keeps
// deployments by its tenant under its subject; called past toolsvc, it
// refuses forged, expired, other-audience and altered assertions.
func TestMCPUpstreamVerifiesIdentity(t *testing.T) {
	front, point := jwksFront(t)
	up := startDeploys(t, "-toolsvc", testIssuer, "-jwks", front)
	const issuer = testIssuer
	t.Setenv("DEPLOYS_TOKEN", deploysToken)
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	body := "upstreams:\n  - name: deploys\n    mcp:\n      url: " + up.url + "\n    credential: {bearer_env: DEPLOYS_TOKEN}\n    timeout: 5s\n    allow_claims: [read_only]\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testserver.WriteCredentials(t)
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) {
		cfg.AuthFile, cfg.UpstreamsFile = c.AuthFile, file
	}})
	point(s)

	args := map[string]any{"service": "billing", "version": "1.4.2", "environment": "staging"}
	for _, tr := range transportsOf(s) {
		out := call(t, tr, c.Full, "create-deployment", args)
		if out.Code != "OK" {
			t.Fatalf("%s create-deployment: %s %v", tr.Name(), out.Code, out.Error)
		}
		dep := out.Result["data"].(map[string]any)["deployment"].(map[string]any)
		if dep["created_by"] != "full" {
			t.Fatalf("%s: deployment = %v, want created by full (from the assertion)", tr.Name(), dep)
		}
	}
	out := call(t, GRPC{S: s}, c.OtherTenant, "list-deployments", map[string]any{})
	if out.Code != "OK" || out.Result["data"].(map[string]any)["total"] != 0.0 {
		t.Fatalf("another tenant lists %v (%s), want none of acme's", out.Result["data"], out.Code)
	}
	out = call(t, MCP{S: s}, c.Full, "list-deployments", map[string]any{})
	if out.Code != "OK" || out.Result["data"].(map[string]any)["total"] != 3.0 {
		t.Fatalf("acme lists %v (%s), want its three", out.Result["data"], out.Code)
	}

	// Past toolsvc, straight to the server.
	keys := s.Store().(store.SigningKeyStore)
	sign := func(issuer string, now time.Time, mutate func(*upstream.Claims)) string {
		t.Helper()
		id, err := upstream.NewIdentity(keys, issuer, upstream.WithIdentityClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		c := &upstream.Claims{Audience: "deploys", Subject: "mallory", Tenant: "acme", Permissions: []string{"deploys:write"},
			IssuedAt: now.Unix(), NotBefore: now.Unix(), Expiry: now.Add(time.Minute).Unix()}
		mutate(c)
		a, err := id.Sign(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	valid := sign(issuer, time.Now(), func(*upstream.Claims) {})
	parts := strings.Split(valid, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	altered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(bytes.Replace(payload, []byte(`"tenant":"acme"`), []byte(`"tenant":"globex"`), 1)) + "." + parts[2]
	session := mcpSession(t, up.url)
	for _, c := range []struct {
		name, assertion string
		ok              bool
	}{
		{"none", "", false},
		{"altered tenant", altered, false},
		{"expired", sign(issuer, time.Now().Add(-3*time.Minute), func(*upstream.Claims) {}), false},
		{"for another audience", sign(issuer, time.Now(), func(c *upstream.Claims) { c.Audience = "tickets" }), false},
		{"from another issuer", sign("https://evil.example", time.Now(), func(*upstream.Claims) {}), false},
		{"without the permission", sign(issuer, time.Now(), func(c *upstream.Claims) { c.Permissions = []string{"deploys:read"} }), false},
		{"valid", valid, true},
	} {
		res := session.callTool(t, "create-deployment", args, c.assertion)
		if res.IsError == c.ok {
			t.Errorf("%s: isError = %v, want %v (%s)", c.name, res.IsError, !c.ok, res.raw)
		}
	}
}

// testIssuer is the test server's public URL (the default --http-addr's),
// known before it starts.
const testIssuer = "http://127.0.0.1:8080"

// jwksFront is where an upstream started before toolsvc fetches toolsvc's
// JWKS (toolsvc reads an upstream's tools at start, so the upstream runs
// first): a redirect to the test server's JWKS once point names it.
func jwksFront(t *testing.T) (string, func(*testserver.Server)) {
	t.Helper()
	var jwks atomic.Pointer[string]
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := jwks.Load(); u != nil {
			http.Redirect(w, r, *u, http.StatusTemporaryRedirect)
			return
		}
		http.Error(w, "toolsvc is not up yet", http.StatusServiceUnavailable)
	}))
	t.Cleanup(front.Close)
	return front.URL + "/jwks", func(s *testserver.Server) {
		if s.Config.PublicURL != testIssuer {
			t.Fatalf("the test server's public URL is %s, want %s", s.Config.PublicURL, testIssuer)
		}
		u := s.HTTP + "/.well-known/jwks.json"
		jwks.Store(&u)
	}
}

// rawMCP is a bare Streamable HTTP session with an MCP server.
type rawMCP struct {
	url, session string
	id           int
}

type toolResult struct {
	IsError bool `json:"isError"`
	raw     string
}

func mcpSession(t *testing.T, url string) *rawMCP {
	t.Helper()
	m := &rawMCP{url: url}
	m.post(t, map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "e2e", "version": "1"}}})
	m.post(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return m
}

func (m *rawMCP) callTool(t *testing.T, name string, args map[string]any, assertion string) toolResult {
	t.Helper()
	m.id++
	meta := map[string]any{}
	if assertion != "" {
		meta[upstream.MetaIdentity] = assertion
	}
	body := m.post(t, map[string]any{"jsonrpc": "2.0", "id": m.id, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args, "_meta": meta}})
	var msg struct {
		Result toolResult `json:"result"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("tools/call answer %q: %v", body, err)
	}
	msg.Result.raw = string(body)
	return msg.Result
}

func (m *rawMCP) post(t *testing.T, msg any) []byte {
	t.Helper()
	b, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, m.url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+deploysToken)
	if m.session != "" {
		req.Header.Set("Mcp-Session-Id", m.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		m.session = s
	}
	out, _ := io.ReadAll(resp.Body)
	if i := bytes.Index(out, []byte("data: ")); i >= 0 { // an event stream
		out = bytes.TrimSpace(bytes.SplitN(out[i+len("data: "):], []byte("\n"), 2)[0])
	}
	return out
}
