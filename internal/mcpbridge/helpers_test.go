package mcpbridge_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// API keys of the auth file newAuthServer writes.
const (
	keyAll       = "test-key-all-permissions-0001"
	keyOther     = "test-key-all-permissions-0002"
	keyKnowledge = "test-key-knowledge-only-0003"
	keyMemory    = "test-key-memory-only-00000004"
)

// newServer starts the real toolsvc wiring (development mode) with MCP
// configured by configure.
func newServer(tb testing.TB, configure func(*server.Config)) *testserver.Server {
	tb.Helper()
	return testserver.New(tb, testserver.Options{Configure: configure})
}

// newAuthServer starts a server with an auth file of three API keys.
func newAuthServer(tb testing.TB, configure func(*server.Config)) *testserver.Server {
	tb.Helper()
	return newAuthServerWith(tb, nil, configure)
}

// newAuthServerWith is newAuthServer serving the tool services of
// services (nil: the built-in ones).
func newAuthServerWith(tb testing.TB, services server.ServicesFunc, configure func(*server.Config)) *testserver.Server {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "auth.yaml")
	content := `api_keys:
  - key: "` + keyAll + `"
    subject: agent-a
    tenant: acme
    permissions: ["*"]
  - key: "` + keyOther + `"
    subject: agent-b
    tenant: acme
    permissions: ["*"]
  - key: "` + keyKnowledge + `"
    subject: reader
    tenant: acme
    permissions: ["knowledge:read"]
  - key: "` + keyMemory + `"
    subject: memory
    tenant: acme
    permissions: ["memory:read"]
`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return testserver.New(tb, testserver.Options{Services: services, Configure: func(c *server.Config) {
		c.AuthFile = path
		c.MCP.AuthorizationServers = []string{"https://auth.example.test"}
		if configure != nil {
			configure(c)
		}
	}})
}

// client is a minimal Streamable HTTP MCP client for the tests.
type client struct {
	tb      testing.TB
	url     string
	session string
	header  http.Header
	nextID  int
}

func newClient(tb testing.TB, base string) *client {
	tb.Helper()
	return &client{tb: tb, url: base + "/mcp", header: http.Header{}}
}

// response is a decoded JSON-RPC response.
type response struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Params json.RawMessage `json:"params"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// post sends body and returns the HTTP response with its body read.
func (c *client) post(body string, extra http.Header) (*http.Response, []byte) {
	c.tb.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.tb.Fatal(err)
	}
	return resp, b
}

// call sends a request and decodes its response (from JSON or from the
// last message of an event stream).
func (c *client) call(method string, params any) response {
	c.tb.Helper()
	c.nextID++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	resp, b := c.post(string(body), nil)
	if resp.StatusCode != http.StatusOK {
		c.tb.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, b)
	}
	msgs := decodeMessages(c.tb, resp.Header.Get("Content-Type"), b)
	return msgs[len(msgs)-1]
}

// result calls method and decodes its result into v, failing on an error.
func (c *client) result(method string, params, v any) {
	c.tb.Helper()
	r := c.call(method, params)
	if r.Error != nil {
		c.tb.Fatalf("%s: error %d %s", method, r.Error.Code, r.Error.Message)
	}
	if err := json.Unmarshal(r.Result, v); err != nil {
		c.tb.Fatalf("%s: result %s: %v", method, r.Result, err)
	}
}

// initialize opens a session (stateful servers) as clientInfo name.
func (c *client) initialize(name string) json.RawMessage {
	c.tb.Helper()
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` + name + `","version":"9.9.9"}}}`
	resp, b := c.post(body, nil)
	if resp.StatusCode != http.StatusOK {
		c.tb.Fatalf("initialize: HTTP %d: %s", resp.StatusCode, b)
	}
	c.session = resp.Header.Get("Mcp-Session-Id")
	msgs := decodeMessages(c.tb, resp.Header.Get("Content-Type"), b)
	if msgs[0].Error != nil {
		c.tb.Fatalf("initialize: %s", msgs[0].Error.Message)
	}
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	return msgs[0].Result
}

// decodeMessages decodes a JSON body or the data lines of an event stream.
func decodeMessages(tb testing.TB, contentType string, b []byte) []response {
	tb.Helper()
	var out []response
	if strings.HasPrefix(contentType, "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var r response
				if err := json.Unmarshal([]byte(data), &r); err != nil {
					tb.Fatalf("event %q: %v", data, err)
				}
				out = append(out, r)
			}
		}
	} else {
		var r response
		if err := json.Unmarshal(b, &r); err != nil {
			tb.Fatalf("body %q: %v", b, err)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		tb.Fatalf("no message in %q", b)
	}
	return out
}

// toolResult is a CallToolResult.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
}
