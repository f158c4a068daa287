package mcpbridge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/server"
)

// TestStreamableHTTP drives the whole protocol surface over real HTTP
// against the real wiring, with and without sessions.
func TestStreamableHTTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		stateless bool
	}{
		{name: "stateful", stateless: false},
		{name: "stateless", stateless: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, func(c *server.Config) { c.MCP.Stateless = tc.stateless; c.MCP.PageSize = 3 })
			c := newClient(t, srv.HTTP)
			var init struct {
				ProtocolVersion string `json:"protocolVersion"`
				Capabilities    map[string]map[string]any
				ServerInfo      mcpbridge.ServerInfo `json:"serverInfo"`
			}
			if err := json.Unmarshal(c.initialize("e2e-agent"), &init); err != nil {
				t.Fatal(err)
			}
			if init.ProtocolVersion != "2025-11-25" || init.ServerInfo.Name != "toolsvc" || init.Capabilities["tools"]["listChanged"] != true {
				t.Fatalf("initialize = %+v", init)
			}
			if got := c.session != ""; got == tc.stateless {
				t.Fatalf("session id %q issued in stateless=%v mode", c.session, tc.stateless)
			}

			tools := listAll(t, c)
			if len(tools) != srv.Registry().Len() || len(tools) < 4 {
				t.Fatalf("listed %d tools over pages, registry has %d", len(tools), srv.Registry().Len())
			}
			for _, tool := range tools {
				ann, _ := tool["annotations"].(map[string]any)
				for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
					if _, ok := ann[k].(bool); !ok {
						t.Errorf("%s: annotations.%s not written out: %v", tool["name"], k, ann)
					}
				}
				meta, _ := tool["_meta"].(map[string]any)
				for _, k := range []string{"version", "category", "permissions", "tags", "cacheable", "examples", "sideEffect", "tenantScoped"} {
					if _, ok := meta[k]; !ok {
						t.Errorf("%s: _meta.%s missing", tool["name"], k)
					}
				}
				if tool["inputSchema"] == nil || tool["outputSchema"] == nil {
					t.Errorf("%s: schemas missing", tool["name"])
				}
			}

			// A successful call: structuredContent and its text copy.
			var res toolResult
			c.result("tools/call", map[string]any{"name": "get-sync-status", "arguments": map[string]any{}}, &res)
			if res.IsError || res.StructuredContent["data"] == nil || res.StructuredContent["agentHints"] == nil || res.StructuredContent["metadata"] == nil {
				t.Fatalf("get-sync-status = %+v", res)
			}
			var text map[string]any
			if len(res.Content) != 1 || res.Content[0].Type != "text" || json.Unmarshal([]byte(res.Content[0].Text), &text) != nil {
				t.Fatalf("content = %+v", res.Content)
			}
			if a, b := mustJSON(t, text), mustJSON(t, res.StructuredContent); a != b {
				t.Fatalf("text %s differs from structuredContent %s", a, b)
			}
			if md, _ := res.StructuredContent["metadata"].(map[string]any); md["toolVersion"] == nil {
				t.Fatalf("metadata = %v", md)
			}

			// Tool errors are results a model can read.
			for _, e := range []struct {
				name, tool string
				args       any
				code       string
			}{
				{name: "unknown field", tool: "query-knowledge", args: map[string]any{"nope": 1}, code: "INVALID_INPUT"},
				{name: "wrong type", tool: "query-knowledge", args: map[string]any{"limit": "ten"}, code: "INVALID_INPUT"},
				{name: "validation rule", tool: "query-knowledge", args: map[string]any{"limit": 1000}, code: "INVALID_INPUT"},
				{name: "not found", tool: "show-knowledge", args: map[string]any{"id": "adr-999-missing"}, code: "NOT_FOUND"},
			} {
				var er toolResult
				c.result("tools/call", map[string]any{"name": e.tool, "arguments": e.args}, &er)
				if !er.IsError || er.StructuredContent["code"] != e.code {
					t.Errorf("%s: result = %+v, want isError with %s", e.name, er, e.code)
				}
			}

			// Protocol faults are JSON-RPC errors.
			for _, p := range []struct {
				name   string
				method string
				params any
				code   int
			}{
				{name: "unknown tool", method: "tools/call", params: map[string]any{"name": "no-such-tool"}, code: -32602},
				{name: "arguments not an object", method: "tools/call", params: map[string]any{"name": "get-sync-status", "arguments": []int{1}}, code: -32602},
				{name: "bad cursor", method: "tools/list", params: map[string]any{"cursor": "garbage"}, code: -32602},
				{name: "unknown method", method: "sampling/unknown", params: nil, code: -32601},
				{name: "bad log level", method: "logging/setLevel", params: map[string]any{"level": "loud"}, code: -32602},
			} {
				r := c.call(p.method, p.params)
				if r.Error == nil || r.Error.Code != p.code {
					t.Errorf("%s: response = %s %+v, want error %d", p.name, r.Result, r.Error, p.code)
				}
			}
			for _, m := range []string{"ping", "logging/setLevel"} {
				var empty map[string]any
				c.result(m, map[string]any{"level": "info"}, &empty)
				if len(empty) != 0 {
					t.Errorf("%s = %v, want {}", m, empty)
				}
			}
			resp, b := c.post(`{"jsonrpc":"2.0","id":1,"method":`, nil)
			if r := decodeMessages(t, "", b)[0]; resp.StatusCode != http.StatusBadRequest || r.Error == nil || r.Error.Code != -32700 {
				t.Errorf("malformed JSON: HTTP %d %s", resp.StatusCode, b)
			}
			resp, b = c.post(`{"jsonrpc":"1.0","id":1,"method":"ping"}`, nil)
			if r := decodeMessages(t, "", b)[0]; r.Error == nil || r.Error.Code != -32600 {
				t.Errorf("jsonrpc 1.0: HTTP %d %s", resp.StatusCode, b)
			}
			resp, _ = c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
			if resp.StatusCode != http.StatusAccepted {
				t.Errorf("notification: HTTP %d, want 202", resp.StatusCode)
			}
		})
	}
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// listAll follows tools/list cursors to the end.
func listAll(tb testing.TB, c *client) []map[string]any {
	tb.Helper()
	var all []map[string]any
	cursor := ""
	for pages := 0; ; pages++ {
		var page struct {
			Tools      []map[string]any `json:"tools"`
			NextCursor string           `json:"nextCursor"`
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		c.result("tools/list", params, &page)
		all = append(all, page.Tools...)
		if page.NextCursor == "" {
			return all
		}
		if pages > 1000 {
			tb.Fatal("tools/list never ends")
		}
		cursor = page.NextCursor
	}
}

// TestHTTPTransportRules covers the transport's checks: Origin (DNS
// rebinding), protocol version, media types, body size, sessions, GET and
// DELETE.
func TestHTTPTransportRules(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(c *server.Config) {
		c.MCP.AllowedOrigins = []string{"https://agent.example.test"}
		c.MaxRequestBytes = 64 << 10
	})
	c := newClient(t, srv.HTTP)
	c.initialize("rules")
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	for _, tc := range []struct {
		name   string
		body   string
		header http.Header
		status int
	}{
		{name: "ok", body: ping, status: http.StatusOK},
		{name: "loopback origin", body: ping, header: http.Header{"Origin": {"http://localhost:3000"}}, status: http.StatusOK},
		{name: "allowed origin", body: ping, header: http.Header{"Origin": {"https://agent.example.test"}}, status: http.StatusOK},
		{name: "foreign origin", body: ping, header: http.Header{"Origin": {"http://evil.example.com"}}, status: http.StatusForbidden},
		{name: "null origin", body: ping, header: http.Header{"Origin": {"null"}}, status: http.StatusForbidden},
		{name: "unsupported protocol version", body: ping, header: http.Header{"Mcp-Protocol-Version": {"1999-01-01"}}, status: http.StatusBadRequest},
		{name: "supported older version", body: ping, header: http.Header{"Mcp-Protocol-Version": {"2025-03-26"}}, status: http.StatusOK},
		{name: "wrong content type", body: ping, header: http.Header{"Content-Type": {"text/plain"}}, status: http.StatusUnsupportedMediaType},
		{name: "not acceptable", body: ping, header: http.Header{"Accept": {"text/html"}}, status: http.StatusNotAcceptable},
		{name: "unknown session", body: ping, header: http.Header{"Mcp-Session-Id": {"0123"}}, status: http.StatusNotFound},
		{name: "too large", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 70<<10) + `"}}`, status: http.StatusRequestEntityTooLarge},
		{name: "batch on 2025-11-25", body: "[" + ping + "]", header: http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}, status: http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := c.post(tc.body, tc.header)
			if resp.StatusCode != tc.status {
				t.Fatalf("HTTP %d (%s), want %d", resp.StatusCode, b, tc.status)
			}
		})
	}

	t.Run("missing session", func(t *testing.T) {
		anon := newClient(t, srv.HTTP)
		if resp, b := anon.post(ping, nil); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("HTTP %d %s", resp.StatusCode, b)
		}
	})
	t.Run("batch on 2025-03-26", func(t *testing.T) {
		resp, b := c.post("["+ping+`,{"jsonrpc":"2.0","id":8,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
			http.Header{"Mcp-Protocol-Version": {"2025-03-26"}})
		var batch []map[string]any
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &batch) != nil || len(batch) != 2 {
			t.Fatalf("HTTP %d %s", resp.StatusCode, b)
		}
	})
	t.Run("server info", func(t *testing.T) {
		resp, err := http.Get(srv.HTTP + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var info mcpbridge.ServerInfo
		if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || info.Name != "toolsvc" || info.ProtocolVersion == "" || info.Message == "" || info.Version == "" {
			t.Fatalf("GET /mcp = %+v, %v", info, err)
		}
	})
	t.Run("event stream", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, srv.HTTP+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		buf := make([]byte, 64)
		n, _ := resp.Body.Read(buf)
		if !strings.HasPrefix(string(buf[:n]), ":") {
			t.Fatalf("stream starts with %q, want a comment", buf[:n])
		}
	})
	t.Run("delete ends the session", func(t *testing.T) {
		d := newClient(t, srv.HTTP)
		d.initialize("deleter")
		req, _ := http.NewRequest(http.MethodDelete, srv.HTTP+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", d.session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: HTTP %d", resp.StatusCode)
		}
		if resp, b := d.post(ping, nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("after DELETE: HTTP %d %s", resp.StatusCode, b)
		}
	})
}
