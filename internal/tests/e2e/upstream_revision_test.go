package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// forecastServer is a Go SDK server (not toolsvc's code) speaking only
// revision, with one tool; 2026-07-28 is served without sessions, as the
// SDK requires.
func forecastServer(t *testing.T, revision string) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "forecast-" + revision, Version: "1.0.0"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{revision}})
	srv.AddTool(weatherTool("Get the weather forecast of a city. Returns one sentence.", false), func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ City string }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{StructuredContent: map[string]any{"forecast": "Sunny in " + in.City + " (" + revision + ")."}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: revision == "2026-07-28"})
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); closeSessions(srv) })
	return hs.URL + "/mcp"
}

// TestUpstreamRevisionsServed: a 2026-only upstream and a 2025-only one,
// both Go SDK servers, served side by side through the chain on gRPC,
// REST and MCP; the operator view says which revision each is spoken to
// and how it was chosen.
func TestUpstreamRevisionsServed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	body := "upstreams:\n" +
		"  - name: modern\n    mcp: {url: " + forecastServer(t, "2026-07-28") + "}\n    allow_claims: [read_only]\n" +
		"    naming: {namespace: modern}\n" +
		"    overlays:\n      get-forecast:\n        examples: [{description: Paris., params_json: '{\"city\": \"Paris\"}', expected_result_json: '{}'}]\n" +
		"  - name: classic\n    mcp: {url: " + forecastServer(t, "2025-11-25") + ", protocol: auto}\n    allow_claims: [read_only]\n" +
		"    naming: {namespace: classic}\n" +
		"    overlays:\n      get-forecast:\n        examples: [{description: Paris., params_json: '{\"city\": \"Paris\"}', expected_result_json: '{}'}]\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testserver.WriteCredentials(t)
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) {
		cfg.AuthFile, cfg.UpstreamsFile = c.AuthFile, file
	}})
	operatorKeys.Store(s, c.Full)
	t.Cleanup(func() { operatorKeys.Delete(s) })
	want := map[string]string{"modern": "2026-07-28", "classic": "2025-11-25"}
	chosen := map[string]string{"modern": "discovered (server/discover)"}
	for _, u := range healthz(t, s)["upstreams"].([]any) {
		h := u.(map[string]any)
		name, _ := h["name"].(string)
		p, _ := h["protocol"].(map[string]any)
		if p == nil || p["revision"] != want[name] || p["configured"] != "auto" {
			t.Fatalf("upstream %s on the operator view: %v", name, h)
		}
		if c, ok := chosen[name]; ok && p["chosen"] != c {
			t.Fatalf("upstream %s chosen %v", name, p["chosen"])
		}
	}
	metrics := metricsText(t, s, c.Full)
	for _, line := range []string{`toolsvc_upstream_mcp_revision{revision="2026-07-28",upstream="modern"} 1`, `toolsvc_upstream_mcp_revision{revision="2025-11-25",upstream="classic"} 1`} {
		if !strings.Contains(metrics, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	for _, tool := range []string{"get-modern-forecast", "get-classic-forecast"} {
		for _, tr := range []Transport{GRPC{S: s}, REST{S: s}, MCP{S: s}} {
			if o := call(t, tr, c.Full, tool, map[string]any{"city": "Oslo"}); o.Code != "OK" {
				t.Fatalf("%s over %T: %s %v (operator view %v)", tool, tr, o.Code, o.Error, healthz(t, s)["upstreams"])
			}
		}
	}
}
