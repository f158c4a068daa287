package mcpbridge_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
)

// TestAuthorization covers MCP authorization: 401 with the protected
// resource metadata, the metadata document, sessions bound to their
// principal, and listings and resources filtered by permissions.
func TestAuthorization(t *testing.T) {
	t.Parallel()
	srv := newAuthServer(t, func(c *server.Config) { c.PublicURL = "http://127.0.0.1:8080" })
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`

	for _, tc := range []struct {
		name, authorization, wantError string
	}{
		{name: "no credentials", authorization: "", wantError: ""},
		{name: "unknown key", authorization: "Bearer not-a-key-at-all-000000", wantError: `error="invalid_token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, srv.HTTP)
			if tc.authorization != "" {
				c.header.Set("Authorization", tc.authorization)
			}
			resp, b := c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, nil)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("HTTP %d %s, want 401", resp.StatusCode, b)
			}
			wa := resp.Header.Get("WWW-Authenticate")
			if !strings.HasPrefix(wa, `Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource"`) || !strings.Contains(wa, tc.wantError) {
				t.Fatalf("WWW-Authenticate = %q", wa)
			}
		})
	}

	t.Run("protected resource metadata", func(t *testing.T) {
		resp, err := http.Get(srv.HTTP + "/.well-known/oauth-protected-resource")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			BearerMethods        []string `json:"bearer_methods_supported"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if doc.Resource != "http://127.0.0.1:8080/mcp" || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != "https://auth.example.test" ||
			len(doc.BearerMethods) != 1 || doc.BearerMethods[0] != "header" {
			t.Fatalf("metadata = %+v", doc)
		}
	})

	t.Run("session bound to principal", func(t *testing.T) {
		a := newClient(t, srv.HTTP)
		a.header.Set("Authorization", "Bearer "+keyAll)
		a.initialize("agent-a")
		if resp, b := a.post(ping, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("owner: HTTP %d %s", resp.StatusCode, b)
		}
		thief := newClient(t, srv.HTTP)
		thief.header.Set("Authorization", "Bearer "+keyOther)
		thief.session = a.session
		if resp, b := thief.post(ping, nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("other principal: HTTP %d %s, want 404", resp.StatusCode, b)
		}
		req, _ := http.NewRequest(http.MethodDelete, srv.HTTP+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+keyOther)
		req.Header.Set("Mcp-Session-Id", a.session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("DELETE by other principal: HTTP %d, want 404", resp.StatusCode)
		}
	})

	t.Run("visibility", func(t *testing.T) {
		all := newClient(t, srv.HTTP)
		all.header.Set("Authorization", "Bearer "+keyAll)
		all.initialize("all")
		reader := newClient(t, srv.HTTP)
		reader.header.Set("Authorization", "Bearer "+keyKnowledge)
		reader.initialize("reader")
		full, limited := listAll(t, all), listAll(t, reader)
		if len(limited) == 0 || len(limited) >= len(full) {
			t.Fatalf("reader sees %d tools, full access %d", len(limited), len(full))
		}
		for _, tool := range limited {
			perms, _ := tool["_meta"].(map[string]any)["permissions"].([]any)
			for _, p := range perms {
				if p != "knowledge:read" {
					t.Errorf("reader sees %s needing %v", tool["name"], p)
				}
			}
		}
		// A tool the reader cannot see is unknown to it.
		if r := reader.call("tools/call", map[string]any{"name": "add-memory", "arguments": map[string]any{"content": "x"}}); r.Error == nil || r.Error.Code != -32602 {
			t.Fatalf("hidden tool call = %s %+v", r.Result, r.Error)
		}
		var res toolResult
		reader.result("tools/call", map[string]any{"name": "query-knowledge", "arguments": map[string]any{}}, &res)
		if res.IsError {
			t.Fatalf("reader's call of a visible tool failed: %+v", res)
		}
		// Resources go through the chain with the caller's permissions.
		memory := newClient(t, srv.HTTP)
		memory.header.Set("Authorization", "Bearer "+keyMemory)
		memory.initialize("memory")
		var list struct {
			Resources []map[string]any `json:"resources"`
		}
		memory.result("resources/list", nil, &list)
		if len(list.Resources) != 0 {
			t.Fatalf("principal without knowledge:read lists %d resources", len(list.Resources))
		}
		if r := memory.call("resources/read", map[string]any{"uri": "knowledge://adr-042-database-selection"}); r.Error == nil || r.Error.Code != -32002 {
			t.Fatalf("denied read = %s %+v", r.Result, r.Error)
		}
	})
}

// TestCredentialVerifiedOncePerCall: the bridge verifies a tools/call's
// credential (to answer a refusal with 401 and WWW-Authenticate) and hands
// the principal on to the chain, which does not verify it again; in both
// revisions.
func TestCredentialVerifiedOncePerCall(t *testing.T) {
	srv := newAuthServer(t, nil)
	a := srv.Authenticator()

	legacy := newClient(t, srv.HTTP)
	legacy.header.Set("Authorization", "Bearer "+keyAll)
	legacy.initialize("legacy")
	before := a.Verifications()
	if r := legacy.call("tools/call", map[string]any{"name": "get-sync-status", "arguments": map[string]any{}}); r.Error != nil {
		t.Fatalf("2025-11-25 tools/call: %+v", r.Error)
	}
	if n := a.Verifications() - before; n != 1 {
		t.Errorf("2025-11-25 tools/call verified the credential %d times, want 1", n)
	}

	modern := newClient(t, srv.HTTP)
	modern.header.Set("Authorization", "Bearer "+keyAll)
	before = a.Verifications()
	if r := modernCall(t, modern, "1", "tools/call", "get-sync-status", `"name":"get-sync-status","arguments":{},`+modernMeta); r.Error != nil {
		t.Fatalf("2026-07-28 tools/call: %+v", r.Error)
	}
	if n := a.Verifications() - before; n != 1 {
		t.Errorf("2026-07-28 tools/call verified the credential %d times, want 1", n)
	}
}
