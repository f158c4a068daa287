package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/oidcprovider"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestMCPClientFollowsProtectedResourceMetadata: an MCP client that knows
// only toolsvc's /mcp URL and its own client credentials is refused with
// a challenge naming the protected resource metadata (RFC 9728), reads
// the authorization server there, that server's metadata (RFC 8414), gets
// a token at its token endpoint (client credentials) and then lists and
// calls tools with the official MCP SDK client.
func TestMCPClientFollowsProtectedResourceMetadata(t *testing.T) {
	p := oidcprovider.Start(t, oidcprovider.Options{Clients: []oidcprovider.Client{
		{ID: "agent", Secret: "agent-secret", Audience: []string{"toolsvc"}, Claims: map[string]any{"tenant": "acme", "permissions": []string{"*"}}},
	}})
	authFile := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(authFile, fmt.Appendf(nil, "jwt:\n  issuer: %q\n  audience: toolsvc\n  jwks_url: %q\n  tenant_claim: tenant\n  permissions_claim: permissions\n",
		p.Issuer, p.JWKSURL()), 0o600); err != nil {
		t.Fatal(err)
	}
	// toolsvc behind a front (as behind a balancer): its public URL is the
	// front's, known before the server starts.
	var backend atomic.Pointer[httputil.ReverseProxy]
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { backend.Load().ServeHTTP(w, r) }))
	t.Cleanup(front.Close)
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) {
		cfg.AuthFile = authFile
		cfg.MCP.AuthorizationServers = []string{p.Issuer}
		cfg.PublicURL = front.URL
	}})
	target, _ := url.Parse(s.HTTP)
	backend.Store(httputil.NewSingleHostReverseProxy(target))
	ctx := t.Context()
	endpoint := front.URL + "/mcp"

	// 1. Unauthenticated: the challenge names the metadata.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode != http.StatusUnauthorized || err != nil || len(challenges) != 1 || challenges[0].Params["resource_metadata"] == "" {
		t.Fatalf("unauthenticated /mcp: %d %v %v", resp.StatusCode, challenges, err)
	}
	// 2. The protected resource metadata, for this resource.
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, challenges[0].Params["resource_metadata"], endpoint, http.DefaultClient)
	if err != nil || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != p.Issuer {
		t.Fatalf("protected resource metadata: %+v %v", prm, err)
	}
	// 3. The authorization server's metadata (OpenID discovery, which MCP
	// clients try after RFC 8414's path; this provider serves only it).
	asm, err := oauthex.GetAuthServerMeta(ctx, prm.AuthorizationServers[0]+"/.well-known/openid-configuration", prm.AuthorizationServers[0], http.DefaultClient)
	if err != nil || asm == nil || asm.TokenEndpoint == "" {
		t.Fatalf("authorization server metadata: %+v %v", asm, err)
	}
	// 4. A token by client credentials, carried by the SDK's transport.
	cc := clientcredentials.Config{ClientID: "agent", ClientSecret: "agent-secret", TokenURL: asm.TokenEndpoint, Scopes: []string{"openid"}}
	client := mcp.NewClient(&mcp.Implementation{Name: "oidc-agent", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: cc.Client(context.Background())}, nil)
	if err != nil {
		t.Fatalf("connect with the provider's token: %v", err)
	}
	defer session.Close()
	tools, err := session.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "add-memory", Arguments: map[string]any{"content": "reached through the provider's token", "layer": "company"}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call: %v %+v", err, res)
	}
}
