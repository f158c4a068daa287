package drivers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/toolsvc/toolsvc/internal/base/mcpclient"
)

// MCPProtocolVersion is the revision the driver speaks; every server
// measured (toolsvc, go-sdk, mark3labs) supports it.
const MCPProtocolVersion = "2025-06-18"

// MCPModernVersion is revision 2026-07-28, which NewMCPModern speaks: no
// session, the revision and client in every request's _meta, and the
// Mcp-Method and Mcp-Name headers naming what the body asks.
const MCPModernVersion = "2026-07-28"

// modernMeta is the _meta of every request of the modern driver.
const modernMeta = `{"io.modelcontextprotocol/protocolVersion":"` + MCPModernVersion +
	`","io.modelcontextprotocol/clientInfo":{"name":"toolsvc-bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// MCP calls one tool over MCP Streamable HTTP. Stateful, it opens a session
// (initialize, notifications/initialized) per API key, or per worker
// without keys, on first use, as an agent would, and reuses it; stateless,
// it sends tools/call alone with no session.
type MCP struct {
	client   *http.Client
	url      string
	tool     string
	args     *Rotation[json.RawMessage]
	keys     []string
	stateful bool
	// modern: revision 2026-07-28 (NewMCPModern).
	modern bool
	// method and params, when method is set, replace tools/call.
	method   string
	params   json.RawMessage
	next     atomic.Uint64
	id       atomic.Uint64
	sessions sync.Map // slot → *mcpSession
}

type mcpSession struct {
	once sync.Once
	id   string
	err  error
}

// NewMCP builds an MCP driver for tool at url (the MCP endpoint), after
// checking that url is loopback. args are the tools/call arguments, in
// rotation.
func NewMCP(client *http.Client, url, tool string, args []json.RawMessage, keys []string, stateful bool) (*MCP, error) {
	if err := CheckLoopback(url); err != nil {
		return nil, err
	}
	return &MCP{client: client, url: url, tool: tool, args: NewRotation(args), keys: keys, stateful: stateful}, nil
}

// NewMCPModern builds an MCP driver for tool at url that speaks revision
// 2026-07-28: each tools/call stands alone, with its _meta and headers.
func NewMCPModern(client *http.Client, url, tool string, args []json.RawMessage, keys []string) (*MCP, error) {
	m, err := NewMCP(client, url, tool, args, keys, false)
	if err != nil {
		return nil, err
	}
	m.modern = true
	return m, nil
}

// NewMCPRequest builds an MCP driver that sends method with params (e.g.
// tools/list) instead of tools/call; any JSON-RPC result is a success.
func NewMCPRequest(client *http.Client, url, method string, params json.RawMessage, stateful bool) (*MCP, error) {
	if err := CheckLoopback(url); err != nil {
		return nil, err
	}
	return &MCP{client: client, url: url, method: method, params: params, stateful: stateful}, nil
}

// Call makes one tools/call. It returns "" on success, "tool_error" for a
// result with isError, "jsonrpc <code>" for a JSON-RPC error, "HTTP <status>"
// or "transport".
func (m *MCP) Call(ctx context.Context, worker int) string {
	slot, key := worker, ""
	if len(m.keys) > 0 {
		slot = int(m.next.Add(1) % uint64(len(m.keys)))
		key = m.keys[slot]
	}
	session := ""
	if m.stateful {
		v, _ := m.sessions.LoadOrStore(slot, &mcpSession{})
		s := v.(*mcpSession)
		s.once.Do(func() { s.id, s.err = m.initialize(ctx, key) })
		if s.err != nil {
			// A failed initialize is retried by the next call.
			m.sessions.CompareAndDelete(slot, s)
			return "initialize"
		}
		session = s.id
	}
	if m.method != "" {
		_, code := m.post(ctx, key, session, m.method, m.params)
		return code
	}
	args := m.args.Next()
	if args == nil {
		args = json.RawMessage("{}")
	}
	call := map[string]any{"name": m.tool, "arguments": args}
	if m.modern {
		call["_meta"] = json.RawMessage(modernMeta)
	}
	params, _ := json.Marshal(call)
	msg, code := m.post(ctx, key, session, "tools/call", params)
	if code != "" {
		return code
	}
	var res struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(msg.Result, &res); err != nil {
		return "malformed"
	}
	if res.IsError {
		return "tool_error"
	}
	return ""
}

func (m *MCP) initialize(ctx context.Context, key string) (string, error) {
	params, _ := json.Marshal(map[string]any{
		"protocolVersion": MCPProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "toolsvc-bench", "version": "1"},
	})
	req, err := m.request(ctx, key, "", m.body("initialize", params))
	if err != nil {
		return "", err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if _, err := readRPC(resp); err != nil {
		return "", err
	}
	id := resp.Header.Get(mcpclient.HeaderSessionID)
	note, err := m.request(ctx, key, id, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return "", err
	}
	nresp, err := m.client.Do(note)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, nresp.Body)
	_ = nresp.Body.Close()
	if nresp.StatusCode/100 != 2 {
		return "", fmt.Errorf("notifications/initialized: HTTP %d", nresp.StatusCode)
	}
	return id, nil
}

// rpcMessage is the part of a JSON-RPC response the driver reads.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int `json:"code"`
	} `json:"error"`
}

func (m *MCP) body(method string, params json.RawMessage) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.id.Add(1), "method": method, "params": params})
	return b
}

func (m *MCP) request(ctx context.Context, key, session string, body []byte) (*http.Request, error) {
	revision := MCPProtocolVersion
	if m.modern {
		revision = MCPModernVersion
	}
	req, err := mcpclient.NewPost(ctx, m.url, body, session, revision)
	if err != nil {
		return nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req, nil
}

func (m *MCP) post(ctx context.Context, key, session, method string, params json.RawMessage) (rpcMessage, string) {
	req, err := m.request(ctx, key, session, m.body(method, params))
	if err != nil {
		return rpcMessage{}, "request"
	}
	if m.modern {
		name := ""
		if method == "tools/call" {
			name = m.tool
		}
		mcpclient.SetMethod(req.Header, method, name)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return rpcMessage{}, transportCode(ctx)
	}
	defer resp.Body.Close()
	msg, err := readRPC(resp)
	var he *httpError
	switch {
	case errors.As(err, &he):
		return msg, "HTTP " + strconv.Itoa(he.status)
	case err != nil:
		return msg, transportCode(ctx)
	case msg.Error != nil:
		return msg, "jsonrpc " + strconv.Itoa(msg.Error.Code)
	}
	return msg, ""
}

type httpError struct{ status int }

func (e *httpError) Error() string { return "HTTP " + strconv.Itoa(e.status) }

// readRPC reads the JSON-RPC response from a JSON body or from the first
// response message of an event stream, and drains the body.
func readRPC(resp *http.Response) (rpcMessage, error) {
	defer func() { _, _ = io.Copy(io.Discard, resp.Body) }()
	if resp.StatusCode/100 != 2 {
		return rpcMessage{}, &httpError{status: resp.StatusCode}
	}
	var msg rpcMessage
	if !mcpclient.IsEventStream(resp) {
		err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&msg)
		return msg, err
	}
	// A response has an id and a result or error; anything else (a
	// notification) is skipped. An event the stream ends in is taken
	// as it is.
	var last error
	found, err := mcpclient.ReadEvents(resp.Body, 64<<20, func(data []byte) bool {
		msg = rpcMessage{}
		last = json.Unmarshal(data, &msg)
		return last == nil && len(msg.ID) > 0 && (msg.Result != nil || msg.Error != nil)
	})
	switch {
	case err != nil:
		return rpcMessage{}, err
	case found:
		return msg, nil
	case len(msg.ID) > 0 || last != nil:
		return msg, last
	}
	return rpcMessage{}, errors.New("event stream ended without a response")
}
