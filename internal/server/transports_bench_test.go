package server_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/base/logline"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// BenchmarkTransports reports what one get-sync-status call costs on each
// transport, allocations included: gRPC over bufconn, and REST, MCP
// 2025-11-25 (with a session) and MCP 2026-07-28 through the server's
// HTTP handler in process (no sockets), all through the full chain of
// `toolsvc serve` with API keys, JSON logs and audit. The figures count
// the client's side too (the gRPC client, or the HTTP request and its
// recorder), the same on every run. Run:
//
//	go test -run '^$' -bench BenchmarkTransports -benchmem ./internal/server/
func BenchmarkTransports(b *testing.B) {
	keys, authFile := writeKeys(b, 2048)
	s := testserver.New(b, testserver.Options{
		Configure: func(c *server.Config) { c.AuthFile = authFile },
		Logger:    slog.New(logline.NewJSONHandler(logFile(b), &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	seedSyncRun(b, s.Store())
	h := s.Handler()
	key := func(i int) string { return keys[i%len(keys)] }

	b.Run("grpc", func(b *testing.B) {
		client := syncv1.NewSyncServiceClient(s.Conn)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			ctx := metadata.AppendToOutgoingContext(b.Context(), "authorization", "Bearer "+key(i))
			if _, err := client.GetSyncStatus(ctx, &syncv1.GetSyncStatusRequest{}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("rest", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			req := httptest.NewRequestWithContext(b.Context(), http.MethodGet, "http://127.0.0.1/v1/sync/status", nil)
			req.Header.Set("Authorization", "Bearer "+key(i))
			serve(b, h, req, `"healthy":true`)
			i++
		}
	})
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get-sync-status","arguments":{}%s}}`
	b.Run("mcp-2025", func(b *testing.B) {
		// A session belongs to the key that opened it: one session per
		// key of mcpSessions, so that the tool's per-principal rate limit
		// admits every call, as it does on the other transports.
		const mcpSessions = 256
		sessions := make([]string, mcpSessions)
		for k := range sessions {
			init := httptest.NewRequestWithContext(b.Context(), http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(
				`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`))
			mcpHeaders(init, key(k), "2025-11-25")
			sessions[k] = serve(b, h, init, `"protocolVersion":"2025-11-25"`).Header().Get("Mcp-Session-Id")
			note := httptest.NewRequestWithContext(b.Context(), http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			mcpHeaders(note, key(k), "2025-11-25")
			note.Header.Set("Mcp-Session-Id", sessions[k])
			serve(b, h, note, "")
		}
		b.ReportAllocs()
		i := 1
		for b.Loop() {
			k := i % mcpSessions
			req := httptest.NewRequestWithContext(b.Context(), http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(fmt.Sprintf(call, i, "")))
			mcpHeaders(req, key(k), "2025-11-25")
			req.Header.Set("Mcp-Session-Id", sessions[k])
			serve(b, h, req, `"isError":false`)
			i++
		}
	})
	b.Run("mcp-2026", func(b *testing.B) {
		meta := `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		b.ReportAllocs()
		i := 1
		for b.Loop() {
			req := httptest.NewRequestWithContext(b.Context(), http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(fmt.Sprintf(call, i, meta)))
			mcpHeaders(req, key(i), "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "get-sync-status")
			serve(b, h, req, `"isError":false`)
			i++
		}
	})
}

func mcpHeaders(req *http.Request, key, version string) {
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
}

// serve runs req through h and fails unless the answer is a 2xx holding
// want.
func serve(b *testing.B, h http.Handler, req *http.Request, want string) *httptest.ResponseRecorder {
	b.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code/100 != 2 || !strings.Contains(rec.Body.String(), want) {
		b.Fatalf("%s %s: %d %s", req.Method, req.URL, rec.Code, rec.Body.String())
	}
	return rec
}
