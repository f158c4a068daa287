package mcpbridge_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
)

// modernMeta is the _meta of a 2026-07-28 request.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"modern-test","version":"1.0"},"io.modelcontextprotocol/clientCapabilities":{}}`

// modernHeaders are the Streamable HTTP headers of a 2026-07-28 request.
func modernHeaders(method, name string) http.Header {
	h := http.Header{}
	h.Set("MCP-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	return h
}

// modernResult is the part of a 2026-07-28 result every method shares.
type modernResult struct {
	ResultType string `json:"resultType"`
	TTLMs      *int   `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
	Meta       map[string]struct {
		Name string `json:"name"`
	} `json:"_meta"`
}

// TestModernHTTP serves revision 2026-07-28 on the sessionful endpoint
// with no initialize: server/discover, tools/list with private cache
// hints, a tools/call, and the refusals the revision defines.
func TestModernHTTP(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil) // sessions on: modern requests need none
	c := newClient(t, srv.HTTP)

	resp, body := c.post(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`, modernHeaders("server/discover", ""))
	var disc struct {
		modernResult
		SupportedVersions []string `json:"supportedVersions"`
	}
	if r := decodeMessages(t, resp.Header.Get("Content-Type"), body)[0]; resp.StatusCode != 200 || json.Unmarshal(r.Result, &disc) != nil ||
		disc.ResultType != "complete" || disc.CacheScope != "public" || len(disc.SupportedVersions) < 2 ||
		disc.SupportedVersions[0] != "2026-07-28" || disc.SupportedVersions[1] != "2025-11-25" || disc.Meta["io.modelcontextprotocol/serverInfo"].Name == "" {
		t.Fatalf("server/discover: HTTP %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Error("a modern request opened a session")
	}

	resp, body = c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+modernMeta+`}}`, modernHeaders("tools/list", ""))
	var list struct {
		modernResult
		Tools []map[string]any `json:"tools"`
	}
	if r := decodeMessages(t, resp.Header.Get("Content-Type"), body)[0]; resp.StatusCode != 200 || json.Unmarshal(r.Result, &list) != nil ||
		list.ResultType != "complete" || list.CacheScope != "private" || list.TTLMs == nil || len(list.Tools) == 0 {
		t.Fatalf("tools/list: HTTP %d %.300s", resp.StatusCode, body)
	}

	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},` + modernMeta + `}}`
	resp, body = c.post(call, modernHeaders("tools/call", "get-sync-status"))
	var res struct {
		modernResult
		toolResult
	}
	if r := decodeMessages(t, resp.Header.Get("Content-Type"), body)[0]; resp.StatusCode != 200 || json.Unmarshal(r.Result, &res) != nil ||
		res.ResultType != "complete" || res.IsError || res.StructuredContent["data"] == nil {
		t.Fatalf("tools/call: HTTP %d %.300s", resp.StatusCode, body)
	}
	// The Mcp-Name header may be Base64 in the sentinel form.
	resp, body = c.post(call, modernHeaders("tools/call", "=?base64?"+base64.StdEncoding.EncodeToString([]byte("get-sync-status"))+"?="))
	if resp.StatusCode != 200 {
		t.Fatalf("tools/call with a Base64 Mcp-Name: HTTP %d %s", resp.StatusCode, body)
	}

	for _, tc := range []struct {
		name   string
		body   string
		header http.Header
		status int
		code   int
	}{
		{"Mcp-Name names another tool", call, modernHeaders("tools/call", "add-memory"), 400, mcpbridge.CodeHeaderMismatch},
		{"Mcp-Name missing", call, modernHeaders("tools/call", ""), 400, mcpbridge.CodeHeaderMismatch},
		{"Mcp-Method disagrees", call, modernHeaders("tools/list", "get-sync-status"), 400, mcpbridge.CodeHeaderMismatch},
		{"Mcp-Method missing", call, func() http.Header { h := modernHeaders("tools/call", "get-sync-status"); h.Del("Mcp-Method"); return h }(), 400, mcpbridge.CodeHeaderMismatch},
		{"protocol header disagrees", call, func() http.Header {
			h := modernHeaders("tools/call", "get-sync-status")
			h.Set("MCP-Protocol-Version", "2025-11-25")
			return h
		}(), 400, mcpbridge.CodeHeaderMismatch},
		{"unsupported version", strings.Replace(call, `"2026-07-28"`, `"2099-01-01"`, 1), func() http.Header {
			h := modernHeaders("tools/call", "get-sync-status")
			h.Del("MCP-Protocol-Version")
			return h
		}(), 400, mcpbridge.CodeUnsupportedProtocolVersion},
		{"ping removed", `{"jsonrpc":"2.0","id":5,"method":"ping","params":{` + modernMeta + `}}`, modernHeaders("ping", ""), 404, mcpbridge.CodeMethodNotFound},
		{"missing resource", `{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"knowledge://nope",` + modernMeta + `}}`,
			modernHeaders("resources/read", "knowledge://nope"), 200, mcpbridge.CodeInvalidParams},
	} {
		resp, body := c.post(tc.body, tc.header)
		r := decodeMessages(t, resp.Header.Get("Content-Type"), body)[0]
		if resp.StatusCode != tc.status || r.Error == nil || r.Error.Code != tc.code {
			t.Errorf("%s: HTTP %d %s, want %d and %d", tc.name, resp.StatusCode, body, tc.status, tc.code)
		}
		if tc.code == mcpbridge.CodeUnsupportedProtocolVersion && !strings.Contains(string(r.Error.Data), `"supported":["2026-07-28","2025-11-25"`) {
			t.Errorf("%s: data %s", tc.name, r.Error.Data)
		}
	}

	// A 2025 client on the same endpoint keeps its handshake and session.
	old := newClient(t, srv.HTTP)
	old.initialize("legacy")
	var legacy struct {
		Tools      []map[string]any `json:"tools"`
		ResultType *string          `json:"resultType"`
	}
	old.result("tools/list", map[string]any{}, &legacy)
	if len(legacy.Tools) == 0 || legacy.ResultType != nil {
		t.Fatalf("2025 tools/list: %d tools, resultType %v", len(legacy.Tools), legacy.ResultType)
	}
}

// TestModernUnauthenticated: a 2026 request without a valid token is a
// 401 with the challenge, whatever its _meta says.
func TestModernUnauthenticated(t *testing.T) {
	t.Parallel()
	srv := newAuthServer(t, nil)
	c := newClient(t, srv.HTTP)
	resp, body := c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`, modernHeaders("tools/list", ""))
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("HTTP %d %s", resp.StatusCode, body)
	}
}

// TestModernStdio serves revision 2026-07-28 over stdio with no
// initialize, beside a 2025 exchange on another connection.
func TestModernStdio(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	c := startStdio(t, srv.MCP(), "")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`)
	if r := c.next(); r.Error != nil || !strings.Contains(string(r.Result), `"supportedVersions":["2026-07-28"`) {
		t.Fatalf("server/discover = %s %+v", r.Result, r.Error)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},` + modernMeta + `}}`)
	var res struct {
		modernResult
		toolResult
	}
	if r := c.next(); r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.ResultType != "complete" || res.IsError {
		t.Fatalf("tools/call = %s %+v", r.Result, r.Error)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2024-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if r := c.next(); r.Error == nil || r.Error.Code != mcpbridge.CodeUnsupportedProtocolVersion {
		t.Fatalf("unsupported version = %s %+v", r.Result, r.Error)
	}
	// Without clientCapabilities a 2026 request is invalid params, as over
	// HTTP (TestModernMetaRequired), and runs nothing.
	c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	if r := c.next(); r.Error == nil || r.Error.Code != mcpbridge.CodeInvalidParams || string(r.ID) != "5" {
		t.Fatalf("no clientCapabilities = %s %+v", r.Result, r.Error)
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"debug",` + modernMeta + `}}`)
	if r := c.next(); r.Error == nil || r.Error.Code != mcpbridge.CodeMethodNotFound {
		t.Fatalf("logging/setLevel = %s %+v", r.Result, r.Error)
	}
}

// TestModernMetaReachesChain: a modern call's clientInfo becomes the
// default agent id and version, and its _meta trace context the call's
// traceparent (what the chain's trace id and audit record read); a
// client's own header wins over _meta.
func TestModernMetaReachesChain(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	ch := &blockingChannel{started: make(chan metadata.MD, 1), ended: make(chan error, 1)}
	b, err := mcpbridge.New(mcpbridge.Config{Registry: srv.Registry(), Channel: ch, Auth: auth.NewDevelopment()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	c := startStdio(t, b, "")
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"tracer","version":"3.1"},"traceparent":"` + tp + `"}}}`)
	var md metadata.MD
	select {
	case md = <-ch.started:
	case <-time.After(10 * time.Second):
		t.Fatalf("the call never reached the channel; the bridge answered %+v", c.next())
	}
	if got := md.Get("traceparent"); len(got) != 1 || got[0] != tp {
		t.Errorf("traceparent = %v", got)
	}
	if got := md.Get("x-agent-id"); len(got) != 1 || got[0] != "tracer" {
		t.Errorf("x-agent-id = %v", got)
	}
	if got := md.Get("x-agent-version"); len(got) != 1 || got[0] != "3.1" {
		t.Errorf("x-agent-version = %v", got)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	<-ch.ended
	c.next()
}

// TestModernMetaRequired: every 2026-07-28 request over HTTP, server/discover
// included, carries _meta with protocolVersion and clientCapabilities, or is
// refused with HTTP 400 and -32602 (SEP-2575, as the conformance suite's
// server-stateless checks it); a header naming another revision than _meta
// is a header mismatch (-32020), before the revision itself is judged.
func TestModernMetaRequired(t *testing.T) {
	srv := newServer(t, nil)
	c := newClient(t, srv.HTTP)
	for _, tc := range []struct {
		name   string
		params string
		status int
		code   int
	}{
		{"no _meta", `{}`, 400, mcpbridge.CodeInvalidParams},
		{"no protocolVersion", `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`, 400, mcpbridge.CodeInvalidParams},
		{"no clientCapabilities", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, 400, mcpbridge.CodeInvalidParams},
		{"body names another revision", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}`, 400, mcpbridge.CodeHeaderMismatch},
		{"unknown revision in header and body", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}`, 400, mcpbridge.CodeUnsupportedProtocolVersion},
		{"no clientInfo is fine", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`, 200, 0},
	} {
		h := modernHeaders("server/discover", "")
		if strings.Contains(tc.name, "header and body") {
			h.Set("MCP-Protocol-Version", "v999.0.0")
		}
		resp, body := c.post(`{"jsonrpc":"2.0","id":7,"method":"server/discover","params":`+tc.params+`}`, h)
		r := decodeMessages(t, resp.Header.Get("Content-Type"), body)[0]
		got := 0
		if r.Error != nil {
			got = r.Error.Code
		}
		if resp.StatusCode != tc.status || got != tc.code || string(r.ID) != "7" {
			t.Errorf("%s: HTTP %d %s, want %d and code %d with id 7", tc.name, resp.StatusCode, body, tc.status, tc.code)
		}
	}
}
