package mcpbridge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
)

// TestOneGuardOnTheEndpoint: /mcp passes one DNS-rebinding guard, the
// bridge's (Host and Origin), and still refuses what the server's guard
// and the bridge's refused together, as they answered: a foreign Host on
// a loopback listener with the server's FORBIDDEN ToolError (as on every
// other route), on any other listener with the bridge's 403, and a foreign
// Origin with the bridge's 403 on both.
func TestOneGuardOnTheEndpoint(t *testing.T) {
	t.Parallel()
	const (
		// The server's ToolError, without its metadata's time stamps.
		serverRefusal = `{"code":"FORBIDDEN","message":"forbidden: the Host header names neither a loopback host nor this service's public URL (a defence against DNS rebinding while listening on loopback): call it as localhost or 127.0.0.1, or set --public-url","kind":"business","agentHints":{"suggestedNextActions":[{"action":"list-tools","priority":"high","description":"list the tools this credential may use and pick one of them","category":"exploration"},{"action":"request-access","priority":"medium","description":"ask the operator for the permission, tenant or scope this call needs"}],"confidence":0.9,"sourceQuality":"high","validityPeriod":"immediate","contextNeeded":["a credential allowed to make this call"],"estimatedImpact":{"benefit":0.3,"effort":0.8,"roi":0.375},"reasoning":"the credential is valid but the policy refuses this call; retrying with it fails again","metadata":{"generatedBy":"toolsvc"}},"errorCode":"FORBIDDEN"}`
		bridgeRefusal = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"forbidden: Origin or Host not allowed"}}`
	)
	for _, tc := range []struct {
		name, addr                 string
		foreignHost, foreignOrigin string
	}{
		{"loopback", "127.0.0.1:8080", serverRefusal, bridgeRefusal},
		{"all interfaces", "0.0.0.0:8080", bridgeRefusal, bridgeRefusal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(c *server.Config) {
				c.HTTPAddr, c.PublicURL, c.InsecureAllowAnonymous = tc.addr, "https://tools.example.com", true
			})
			for _, rc := range []struct {
				name, host, origin, want string
			}{
				{"foreign host", "evil.example", "", tc.foreignHost},
				{"foreign host and origin", "evil.example", "https://evil.example", tc.foreignHost},
				{"foreign origin", "tools.example.com", "https://evil.example", tc.foreignOrigin},
				{"foreign origin on loopback", "127.0.0.1", "https://evil.example", tc.foreignOrigin},
			} {
				for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
					req, _ := http.NewRequest(method, srv.HTTP+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
					req.Host = rc.host
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					if rc.origin != "" {
						req.Header.Set("Origin", rc.origin)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusForbidden || normalJSON(t, body) != normalJSON(t, []byte(rc.want)) || resp.Header.Get("Content-Type") != "application/json" {
						t.Errorf("%s %s /mcp: %d %s %s, want 403 application/json %s", rc.name, method, resp.StatusCode, resp.Header.Get("Content-Type"), body, rc.want)
					}
				}
			}
		})
	}
}

// normalJSON is b with its keys sorted and no spaces, and without the
// time stamps of a ToolError's hints.
func normalJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if h, ok := v["agentHints"].(map[string]any); ok {
		if m, ok := h["metadata"].(map[string]any); ok {
			delete(m, "generatedAt")
			delete(m, "processingTime")
		}
	}
	out, _ := json.Marshal(v)
	return string(out)
}
