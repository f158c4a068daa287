package mcpbridge_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/server"
)

// ambiguousEnvelopes are the seven envelopes that each ran a tool
// when encoding/json read the envelope (case-insensitive keys, Unicode
// folding, the last duplicate winning), and each must be refused with
// -32600 before anything is called.
var ambiguousEnvelopes = []struct{ name, body string }{
	{"name and Name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","Name":"add-memory","arguments":{}}}`},
	{"Name alone", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"get-sync-status","arguments":{}}}`},
	{"Method", `{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}`},
	{"name twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add-memory","name":"get-sync-status","arguments":{}}}`},
	{"paramſ", `{"jsonrpc":"2.0","id":1,"method":"tools/call","paramſ":{"name":"get-sync-status","arguments":{}}}`},
	{"name NUL", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","name\u0000":"add-memory","arguments":{}}}`},
	{"method twice", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}`},
}

// moreAmbiguous are relatives of the seven at the other levels the bridge
// reads (_meta, the envelope's id and jsonrpc, escapes that spell a key
// another way, the Kelvin sign, a zero-width space), in a batch, and in
// 2026-era _meta.
var moreAmbiguous = []struct{ name, body string }{
	{"ID", `{"jsonrpc":"2.0","ID":1,"id":2,"method":"tools/call","params":{"name":"get-sync-status"}}`},
	{"JSONRPC", `{"JSONRPC":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status"}}`},
	{"escaped duplicate", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add-memory","n\u0061me":"get-sync-status"}}`},
	{"Kelvin", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},"_meta":{"progressToKen":1}}}`},
	{"escaped long s", `{"jsonrpc":"2.0","id":1,"method":"tools/call","param\u017f":{"name":"get-sync-status"}}`},
	{"zero-width space", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name\u200b":"add-memory","name":"get-sync-status"}}`},
	{"ARGUMENTS", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","ARGUMENTS":{}}}`},
	{"_Meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","_Meta":{}}}`},
	{"duplicate _meta key", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","_meta":{"progressToken":1,"progressToken":2}}}`},
	{"duplicate argument", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{"a":1,"a":2}}}`},
	{"2026 meta case", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","_meta":{"io.modelcontextprotocol/ProtocolVersion":"2026-07-28"}}}`},
	{"non-UTF-8 key", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"get-sync-status\",\"nam\xffe\":1}}"},
}

// countingChannel answers every call at once and counts them.
type countingChannel struct{ calls atomic.Int64 }

func (c *countingChannel) Invoke(context.Context, string, any, any, ...grpc.CallOption) error {
	c.calls.Add(1)
	return nil
}

func (c *countingChannel) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "no streams")
}

// countingBridge is a stateless bridge over the real registry whose
// channel counts calls.
func countingBridge(t *testing.T) (*mcpbridge.Bridge, *countingChannel) {
	t.Helper()
	srv := newServer(t, nil)
	ch := &countingChannel{}
	b, err := mcpbridge.New(mcpbridge.Config{Registry: srv.Registry(), Channel: ch, Auth: auth.NewDevelopment(), Stateless: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b, ch
}

func postMCP(h http.Handler, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestStrictEnvelopesHTTP: every ambiguous envelope is answered HTTP 400
// with -32600 and calls nothing; the same envelope spelled exactly runs.
func TestStrictEnvelopesHTTP(t *testing.T) {
	t.Parallel()
	b, ch := countingBridge(t)
	for _, tc := range append(ambiguousEnvelopes, moreAmbiguous...) {
		rec := postMCP(b, tc.body)
		var r response
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
			t.Fatalf("%s: %s", tc.name, rec.Body)
		}
		if rec.Code != http.StatusBadRequest || r.Error == nil || r.Error.Code != mcpbridge.CodeInvalidRequest {
			t.Errorf("%s: HTTP %d %s, want 400 and -32600", tc.name, rec.Code, rec.Body)
		}
	}
	// Batches are read as strictly (2025-03-26 allows them).
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader("["+ambiguousEnvelopes[0].body+"]"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	rec := httptest.NewRecorder()
	b.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "-32600") {
		t.Errorf("batch: HTTP %d %s", rec.Code, rec.Body)
	}
	if n := ch.calls.Load(); n != 0 {
		t.Fatalf("%d calls reached the channel from refused envelopes", n)
	}
	rec = postMCP(b, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},"_meta":{"progressToken":"p","custom.example/Name":1}}}`)
	if rec.Code != http.StatusOK || ch.calls.Load() != 1 {
		t.Fatalf("exact envelope: HTTP %d %s, %d calls", rec.Code, rec.Body, ch.calls.Load())
	}
}

// TestStrictEnvelopesRealServer sends the seven envelopes to the real
// stateless wiring (the reproduction): none runs a tool.
func TestStrictEnvelopesRealServer(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(c *server.Config) { c.MCP.Stateless = true })
	h := srv.Handler()
	for _, tc := range ambiguousEnvelopes {
		rec := postMCP(h, tc.body)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"code":-32600`) || strings.Contains(rec.Body.String(), "structuredContent") {
			t.Errorf("%s: HTTP %d %s", tc.name, rec.Code, rec.Body)
		}
	}
}

// TestStrictEnvelopesStdio: the same refusals over stdio, in both eras'
// framing (a 2025 session after initialize, and no initialize at all).
func TestStrictEnvelopesStdio(t *testing.T) {
	t.Parallel()
	b, ch := countingBridge(t)
	c := startStdio(t, b, "")
	for _, tc := range append(ambiguousEnvelopes, moreAmbiguous...) {
		c.send(tc.body)
		if r := c.next(); r.Error == nil || r.Error.Code != mcpbridge.CodeInvalidRequest || string(r.ID) != "null" {
			t.Errorf("%s: %s %+v, want -32600", tc.name, r.Result, r.Error)
		}
	}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	c.next()
	for _, tc := range ambiguousEnvelopes {
		c.send(tc.body)
		if r := c.next(); r.Error == nil || r.Error.Code != mcpbridge.CodeInvalidRequest {
			t.Errorf("%s after initialize: %s %+v, want -32600", tc.name, r.Result, r.Error)
		}
	}
	if n := ch.calls.Load(); n != 0 {
		t.Fatalf("%d calls reached the channel from refused envelopes", n)
	}
}
