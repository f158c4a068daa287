package server_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"testing"

	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// BenchmarkMCPCachedRead is make bench's cached read in process (no
// sockets): tools/call of show-knowledge of the company-wide item over MCP
// 2026-07-28, rotating over 512 API keys, each principal's result in the
// chain's cache before the timer starts, so that every call measured is a
// hit: the bridge, the whole chain (its decisions, audit included), the
// cache's hit and the rendering of the answer. Instructions per call:
//
//	go test -c -o server.test ./internal/server/
//	valgrind --tool=callgrind ./server.test -test.run '^$' -test.bench 'BenchmarkMCPCachedRead$' -test.benchtime 3000x -test.cpu 1   # and 1000x
func BenchmarkMCPCachedRead(b *testing.B) {
	keys, authFile := writeKeys(b, 512)
	s := testserver.New(b, testserver.Options{
		Configure: func(c *server.Config) { c.AuthFile = authFile },
		Logger:    slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	h := s.Handler()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"show-knowledge","arguments":{"id":"pol-012-no-plaintext-secrets"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	w := &sink{h: http.Header{}}
	call := func(key string, cached bool) {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
		req.Host = "127.0.0.1"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", mcpbridge.Revision20260728)
		req.Header.Set(mcpbridge.HeaderMcpMethod, "tools/call")
		req.Header.Set(mcpbridge.HeaderMcpName, "show-knowledge")
		req.Header.Set("Authorization", "Bearer "+key)
		clear(w.h)
		w.status, w.body = 0, w.body[:0]
		h.ServeHTTP(w, req)
		// The answer's end only (its metadata, isError): the whole body
		// searched twice was a tenth of a call's instructions.
		tail := w.body[max(0, len(w.body)-1024):]
		if w.status != http.StatusOK || !bytes.Contains(tail, []byte(`"isError":false`)) ||
			cached && !bytes.Contains(tail, []byte(`"cached":true`)) {
			b.Fatalf("HTTP %d: %s", w.status, w.body)
		}
	}
	for i, k := range keys {
		call(k, false)
		if i%16 == 15 {
			runtime.Gosched()
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		call(keys[i%len(keys)], true)
		if i%16 == 15 {
			// On one P (callgrind's -test.cpu 1) the audit writer runs
			// when this loop lets it: without, its queue fills and the
			// chain refuses calls it could not audit.
			runtime.Gosched()
		}
	}
}
