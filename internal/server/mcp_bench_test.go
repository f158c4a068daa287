package server_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// BenchmarkMCPSyncStatus is a stateless MCP tools/call of get-sync-status
// through the server's own HTTP handler in process (no sockets): the
// bridge, ToolService over the in-process channel, the full chain and the
// tool, as `toolsvc serve --mcp-stateless` serves it. Its profile is where
// an MCP call's time goes:
//
//	go test -run '^$' -bench BenchmarkMCPSyncStatus -benchmem -cpuprofile cpu.out ./internal/server/
func BenchmarkMCPSyncStatus(b *testing.B) {
	keys, authFile := writeKeys(b, 256)
	s := testserver.New(b, testserver.Options{
		Configure: func(c *server.Config) { c.AuthFile = authFile; c.MCP.Stateless = true },
		Logger:    slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	seedSyncRun(b, s.Store())
	h := s.Handler()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}`)
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &sink{h: http.Header{}}
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
			req.Host = "127.0.0.1"
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			req.Header.Set("Authorization", "Bearer "+keys[next.Add(1)%uint64(len(keys))])
			clear(w.h)
			w.status, w.body = 0, w.body[:0]
			h.ServeHTTP(w, req)
			if w.status != http.StatusOK || !bytes.Contains(w.body, []byte(`"isError":false`)) {
				b.Fatalf("HTTP %d: %s", w.status, w.body)
			}
		}
	})
}

type sink struct {
	h      http.Header
	status int
	body   []byte
}

func (w *sink) Header() http.Header { return w.h }
func (w *sink) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *sink) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

// BenchmarkMCPSessionSyncStatus is BenchmarkMCPSyncStatus in 2025-11-25
// sessions (one per key, opened first): with the sessions in memory, and
// shared through Redis (TOOLSVC_TEST_REDIS), where a request finds its
// session in the replica's cache and asks Redis once per session every
// SessionRecheck (5s). The difference is the per-request cost of sessions
// valid on every replica.
func BenchmarkMCPSessionSyncStatus(b *testing.B) {
	for _, shared := range []bool{false, true} {
		name := "memory"
		if shared {
			name = "redis"
		}
		b.Run(name, func(b *testing.B) {
			redisURL := os.Getenv("TOOLSVC_TEST_REDIS")
			if shared && redisURL == "" {
				b.Skip("TOOLSVC_TEST_REDIS is not set")
			}
			keys, authFile := writeKeys(b, 64)
			s := testserver.New(b, testserver.Options{
				Configure: func(c *server.Config) {
					c.AuthFile = authFile
					if shared {
						c.Redis, c.RedisKeyPrefix, c.RedisTimeout = redisURL, "bench:"+b.Name()+":", time.Second
					}
				},
				Logger: slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
			})
			seedSyncRun(b, s.Store())
			h := s.Handler()
			post := func(w *sink, key, session string, body []byte) {
				req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
				req.Host = "127.0.0.1"
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
				req.Header.Set("Authorization", "Bearer "+key)
				if session != "" {
					req.Header.Set("Mcp-Session-Id", session)
				}
				clear(w.h)
				w.status, w.body = 0, w.body[:0]
				h.ServeHTTP(w, req)
			}
			sessions := make([]string, len(keys))
			init := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
			for i, k := range keys {
				w := &sink{h: http.Header{}}
				post(w, k, "", init)
				if sessions[i] = w.h.Get("Mcp-Session-Id"); w.status != http.StatusOK || sessions[i] == "" {
					b.Fatalf("initialize: HTTP %d %s", w.status, w.body)
				}
			}
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}`)
			var next atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := &sink{h: http.Header{}}
				for pb.Next() {
					i := next.Add(1) % uint64(len(keys))
					post(w, keys[i], sessions[i], body)
					if w.status != http.StatusOK || !bytes.Contains(w.body, []byte(`"isError":false`)) {
						b.Fatalf("HTTP %d: %s", w.status, w.body)
					}
				}
			})
		})
	}
}
