package mcpbridge_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// FuzzJSONRPC sends arbitrary bodies to POST /mcp of the real server (in
// stateless mode, so every body is a complete exchange): the bridge must
// never panic, never answer 5xx, and every 200 must carry a JSON-RPC 2.0
// reply (or be empty for notifications).
func FuzzJSONRPC(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search-memories","arguments":{"query":"x"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add-memory","arguments":{"content":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":"knowledge://../../etc/passwd"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"method":7}`,
		`{"jsonrpc":"1.0","id":null}`,
		`{`, ``, `null`, `"\u0000"`,
	} {
		f.Add([]byte(seed))
	}
	s := testserver.New(f, testserver.Options{Configure: func(c *server.Config) { c.MCP.Stateless = true }})
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusForbidden {
			t.Fatalf("HTTP 403: the request must pass the Host check to reach the parser")
		}
		if rec.Code >= 500 {
			t.Fatalf("HTTP %d for %q: %s", rec.Code, body, rec.Body.String())
		}
		out := bytes.TrimSpace(rec.Body.Bytes())
		if rec.Code != http.StatusOK || len(out) == 0 || rec.Header().Get("Content-Type") != "application/json" {
			return
		}
		var reply any
		if err := json.Unmarshal(out, &reply); err != nil {
			t.Fatalf("a 200 that is not JSON for %q: %s", body, out)
		}
	})
}
