package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/rest/console"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// get sends GET path to srv under the Host header host.
func getAs(t *testing.T, srv *testserver.Server, path, host string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.HTTP+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// TestForeignHostRefusedOnEveryRoute: in anonymous development mode on
// loopback, a request whose Host is a foreign name (a page that rebound
// its name to 127.0.0.1) is refused on every HTTP route, REST and the
// console included, with a FORBIDDEN ToolError; loopback names and the
// public URL's host are served. The probe routes are not guarded
// (TestProbesPassTheHostGuard).
func TestForeignHostRefusedOnEveryRoute(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t, testserver.Options{Configure: func(c *server.Config) {
		c.PublicURL = "https://tools.example.com"
	}})
	routes := []string{"/v1/tools", "/v1/sync/status", "/healthz?view=operator", "/metrics", "/openapi.json", console.Path + "/", "/mcp",
		"/.well-known/oauth-protected-resource"}
	u, _ := url.Parse(srv.HTTP)
	for _, path := range routes {
		for _, host := range []string{"evil.example", "evil.example:" + u.Port(), "127.0.0.1.evil.example", "tools.example.com.evil.example"} {
			status, body := getAs(t, srv, path, host)
			var te struct{ Code, Message string }
			if status != http.StatusForbidden || json.Unmarshal(body, &te) != nil || te.Code != "FORBIDDEN" || !strings.Contains(te.Message, "DNS rebinding") {
				t.Errorf("GET %s with Host %s = %d %.200s, want 403 FORBIDDEN", path, host, status, body)
			}
		}
	}
	for _, host := range []string{"", "localhost:" + u.Port(), "[::1]:" + u.Port(), "tools.example.com"} {
		if status, body := getAs(t, srv, "/v1/tools", host); status != http.StatusOK {
			t.Errorf("GET /v1/tools with Host %q = %d %.200s, want 200", host, status, body)
		}
	}
}
