package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeMCP is a Streamable HTTP MCP server written by hand, to drive the
// client's edge cases: answers as JSON or as an event stream with a
// notification first, a forgotten session, a refused credential, junk.
type fakeMCP struct {
	mu       sync.Mutex
	session  string
	inits    int
	mode     string // "", "sse", "forget", "junk"
	lastAuth string
}

func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastAuth = r.Header.Get("Authorization")
	if f.lastAuth != "Bearer good" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &msg)
	if msg.Method == "initialize" {
		f.inits++
		f.session = fmt.Sprintf("s%d", f.inits)
		w.Header().Set("Mcp-Session-Id", f.session)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`, msg.ID)
		return
	}
	if r.Header.Get("Mcp-Session-Id") != f.session || f.mode == "forget" {
		f.mode = ""
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if len(msg.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch f.mode {
	case "junk":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `<html>oops</html>`)
	case "sse":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":[]}}\n\n", msg.ID)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, msg.ID)
	}
}

func TestMCPClientOverHTTP(t *testing.T) {
	fake := &fakeMCP{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	var heard atomic.Int32
	newClient := func(token string) *mcpClient {
		c, err := newMCPClient(Config{Name: "fake", MCP: &MCPServer{URL: srv.URL}, TLS: TLS{Mode: "plaintext"}, token: token},
			slog.New(slog.DiscardHandler), func(m string, _ ...json.RawMessage) {
				if m == "notifications/tools/list_changed" {
					heard.Add(1)
				}
			})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.close)
		return c
	}
	ctx := context.Background()
	c := newClient("good")
	if _, err := c.call(ctx, "tools/list", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	fake.mu.Lock()
	fake.mode = "sse"
	fake.mu.Unlock()
	if _, err := c.call(ctx, "tools/list", map[string]any{}, nil); err != nil || heard.Load() != 1 {
		t.Fatalf("event-stream answer: err %v, notifications heard %d", err, heard.Load())
	}
	fake.mu.Lock()
	fake.mode = "forget"
	fake.mu.Unlock()
	if _, err := c.call(ctx, "tools/list", map[string]any{}, nil); err != nil {
		t.Fatalf("after the server forgot the session: %v", err)
	}
	if fake.inits != 2 {
		t.Fatalf("initialize ran %d times, want 2 (once again for the forgotten session)", fake.inits)
	}
	fake.mu.Lock()
	fake.mode = "junk"
	fake.mu.Unlock()
	if _, err := c.call(ctx, "tools/list", map[string]any{}, nil); !errors.Is(err, errMalformedMessage) {
		t.Fatalf("junk answer: %v", err)
	}
	if _, err := newClient("bad").call(ctx, "tools/list", map[string]any{}, nil); !errors.Is(err, errCredentialRefused) {
		t.Fatalf("refused credential: %v", err)
	}
	srv.Close()
	if _, err := newClient("good").call(ctx, "tools/list", map[string]any{}, nil); !errors.Is(err, errUnreachable) {
		t.Fatalf("server gone: %v", err)
	}
}
