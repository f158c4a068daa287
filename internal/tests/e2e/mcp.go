package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolsvc/toolsvc/internal/base/mcpclient"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// MCP calls tools as an agent does over Streamable HTTP: initialize (the
// session is bound to the credential), notifications/initialized, then
// tools/call. HTTP 401 maps to UNAUTHORIZED, a JSON-RPC "unknown tool"
// (which is also how an invisible tool answers) to NOT_FOUND, and an
// isError result to its ToolError code.
type MCP struct {
	S *testserver.Server
	// Client sends the requests; default http.DefaultClient.
	Client *http.Client
	// MetaKey sends an Idempotency-Key header as the call's
	// _meta.idempotencyKey instead, as a stdio client must.
	MetaKey bool
	// Version pins every call (_meta "toolsvc/version"); "" for none.
	Version string
	// Modern calls as a revision 2026-07-28 client: no initialize, no
	// session, the revision's _meta on the call.
	Modern bool
	// Path is the MCP endpoint; default "/mcp" (a tool set's is
	// "/mcp/sets/{set}").
	Path string
}

func (m MCP) endpoint() string { return m.S.HTTP + cmp.Or(m.Path, "/mcp") }

// Name implements Transport.
func (m MCP) Name() string {
	if m.Modern {
		return "mcp-2026"
	}
	return "mcp"
}

type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Call implements Transport.
func (m MCP) Call(ctx context.Context, token, tool string, args map[string]any, headers map[string]string) (Outcome, error) {
	session := ""
	post := func(body map[string]any) (int, rpcReply, error) {
		raw, _ := json.Marshal(body)
		req, err := mcpclient.NewPost(ctx, m.endpoint(), raw, session, m.revision())
		if err != nil {
			return 0, rpcReply{}, err
		}
		if m.Modern {
			name := ""
			if p, ok := body["params"].(map[string]any); ok && p["name"] != nil {
				name = fmt.Sprint(p["name"])
			}
			mcpclient.SetMethod(req.Header, fmt.Sprint(body["method"]), name)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range headers {
			if m.MetaKey && http.CanonicalHeaderKey(k) == "Idempotency-Key" {
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := httpClient(m.Client).Do(req)
		if err != nil {
			return 0, rpcReply{}, err
		}
		defer resp.Body.Close()
		if s := resp.Header.Get(mcpclient.HeaderSessionID); s != "" {
			session = s
		}
		b := replyBody(resp)
		var r rpcReply
		if resp.StatusCode == http.StatusOK && len(bytes.TrimSpace(b)) > 0 {
			if err := json.Unmarshal(b, &r); err != nil {
				return 0, r, fmt.Errorf("not a JSON-RPC reply: %q", b)
			}
		}
		if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
			return 0, r, fmt.Errorf("401 without WWW-Authenticate")
		}
		return resp.StatusCode, r, nil
	}
	var (
		status int
		r      rpcReply
		err    error
	)
	if !m.Modern {
		status, r, err = post(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
			"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "e2e", "version": "1.0.0"},
		}})
		if err != nil {
			return Outcome{}, err
		}
		if status == http.StatusUnauthorized {
			return Outcome{Code: "UNAUTHORIZED", Error: map[string]any{"message": "HTTP 401", "kind": "validation"}}, nil
		}
		if status != http.StatusOK || r.Error != nil {
			return Outcome{}, fmt.Errorf("initialize: HTTP %d %v", status, r.Error)
		}
		if status, _, err = post(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil || status >= 300 {
			return Outcome{}, fmt.Errorf("notifications/initialized: HTTP %d %w", status, err)
		}
	}
	callParams := map[string]any{"name": tool, "arguments": args}
	meta := map[string]any{}
	if m.Modern {
		meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "e2e", "version": "1.0.0"}
		meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
	}
	for k, v := range headers {
		if m.MetaKey && http.CanonicalHeaderKey(k) == "Idempotency-Key" {
			meta["idempotencyKey"] = v
		}
	}
	if m.Version != "" {
		meta["toolsvc/version"] = m.Version
	}
	if len(meta) > 0 {
		callParams["_meta"] = meta
	}
	status, r, err = post(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": callParams})
	if err != nil {
		return Outcome{}, err
	}
	switch {
	case status == http.StatusUnauthorized:
		return Outcome{Code: "UNAUTHORIZED", Error: map[string]any{"message": "HTTP 401", "kind": "validation"}}, nil
	case status != http.StatusOK:
		return Outcome{}, fmt.Errorf("tools/call: HTTP %d", status)
	case r.Error != nil && strings.Contains(r.Error.Message, "unknown tool"):
		return Outcome{Code: "NOT_FOUND", Error: map[string]any{"message": r.Error.Message, "kind": "business"}}, nil
	case r.Error != nil:
		return Outcome{}, fmt.Errorf("tools/call: JSON-RPC error %d %s", r.Error.Code, r.Error.Message)
	}
	var res struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
		Content           []struct {
			Type, Text string
		} `json:"content"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return Outcome{}, err
	}
	if len(res.Content) == 0 || res.Content[0].Type != "text" {
		return Outcome{}, fmt.Errorf("tools/call result without text content")
	}
	if res.IsError {
		code, _ := res.StructuredContent["code"].(string)
		return Outcome{Code: code, Error: res.StructuredContent}, nil
	}
	return Outcome{Code: "OK", Result: res.StructuredContent}, nil
}

// revision is the MCP-Protocol-Version header of every request.
func (m MCP) revision() string {
	if m.Modern {
		return "2026-07-28"
	}
	return "2025-11-25"
}

// replyBody is the reply in resp: its JSON body, or the data of the last
// event of its event stream.
func replyBody(resp *http.Response) []byte {
	if !mcpclient.IsEventStream(resp) {
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	var last []byte
	_, _ = mcpclient.ReadEvents(resp.Body, 64<<20, func(data []byte) bool {
		last = bytes.Clone(data)
		return false
	})
	return last
}

// RPCError is a JSON-RPC error of a protocol method.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// Protocol sends one protocol request (resources/list, resources/read,
// completion/complete...) as an agent would, in a fresh session of token
// (or, Modern, as a 2026-07-28 request without one), and returns its
// result or its JSON-RPC error.
func (m MCP) Protocol(ctx context.Context, token, method string, params map[string]any) (json.RawMessage, *RPCError, error) {
	session := ""
	post := func(body map[string]any) (json.RawMessage, *RPCError, error) {
		raw, _ := json.Marshal(body)
		req, err := mcpclient.NewPost(ctx, m.endpoint(), raw, session, m.revision())
		if err != nil {
			return nil, nil, err
		}
		if m.Modern {
			name := ""
			if p, ok := body["params"].(map[string]any); ok {
				if n, ok := p["name"].(string); ok {
					name = n
				} else if uri, ok := p["uri"].(string); ok {
					name = uri
				}
			}
			mcpclient.SetMethod(req.Header, fmt.Sprint(body["method"]), name)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		if s := resp.Header.Get(mcpclient.HeaderSessionID); s != "" {
			session = s
		}
		b := replyBody(resp)
		if resp.StatusCode >= 300 {
			return nil, nil, fmt.Errorf("%s: HTTP %d", body["method"], resp.StatusCode)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, nil, nil
		}
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *RPCError       `json:"error"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, nil, fmt.Errorf("not a JSON-RPC reply: %q", b)
		}
		return r.Result, r.Error, nil
	}
	if m.Modern {
		p := map[string]any{}
		for k, v := range params {
			p[k] = v
		}
		p["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e", "version": "1.0.0"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}}
		return post(map[string]any{"jsonrpc": "2.0", "id": 2, "method": method, "params": p})
	}
	if _, rerr, err := post(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "e2e", "version": "1.0.0"},
	}}); err != nil || rerr != nil {
		return nil, rerr, fmt.Errorf("initialize: %w", err)
	}
	if _, _, err := post(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return nil, nil, err
	}
	return post(map[string]any{"jsonrpc": "2.0", "id": 2, "method": method, "params": params})
}
