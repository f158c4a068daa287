package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// Transport names, as in callctx.Transport*.
const (
	trGRPC = "grpc"
	trREST = "rest"
	trMCP  = "mcp"
)

// outcome is what one transport answered for one call.
type outcome struct {
	// Code is the ToolError code, "OK" on success, or "RPC_ERROR" for a
	// JSON-RPC protocol fault (MCP) and "HTTP_ERROR" for an HTTP refusal
	// without a ToolError (e.g. 431 from net/http).
	Code string
	// HTTPStatus is the HTTP status (REST and MCP); 0 on gRPC.
	HTTPStatus int
	// RPCError is the JSON-RPC error code of an MCP protocol fault.
	RPCError int
	// Message is the error's message (ToolError, JSON-RPC or HTTP body).
	Message string
	// Error is the ToolError as JSON, when there is one.
	Error map[string]any
	// Result is {data, agentHints, metadata} on success.
	Result map[string]any
	// RetryAfter is the HTTP Retry-After header or gRPC RetryInfo.
	RetryAfter string
}

// fields returns the field paths of the error's fieldViolations.
func (o outcome) fields() []string {
	var out []string
	vs, _ := o.Error["fieldViolations"].([]any)
	for _, v := range vs {
		if m, ok := v.(map[string]any); ok {
			if f, ok := m["field"].(string); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

// grpcCall calls a tool through ToolService.CallTool on conn.
func grpcCall(ctx context.Context, conn grpc.ClientConnInterface, token, tool string, args map[string]any, headers map[string]string) (outcome, error) {
	st, err := structpb.NewStruct(args)
	if err != nil {
		return outcome{}, fmt.Errorf("arguments as Struct: %w", err)
	}
	md := metadata.MD{}
	if token != "" {
		md.Set("authorization", "Bearer "+token)
	}
	for k, v := range headers {
		md.Set(k, v)
	}
	resp, err := toolsvcv1.NewToolServiceClient(conn).CallTool(metadata.NewOutgoingContext(ctx, md), &toolsvcv1.CallToolRequest{Name: tool, Arguments: st})
	if err != nil {
		s, ok := status.FromError(err)
		if !ok {
			return outcome{}, err
		}
		te := toolerr.FromStatus(s)
		o := outcome{Code: te.GetCode(), Message: te.GetMessage(), Error: protoJSON(te)}
		if d := toolerr.RetryAfter(s); d > 0 {
			o.RetryAfter = d.String()
		}
		return o, nil
	}
	return outcome{Code: "OK", Result: protoJSON(resp)}, nil
}

// protoJSON renders m as the JSON a REST or MCP client would see.
func protoJSON(m proto.Message) map[string]any {
	b, err := protojson.MarshalOptions{EmitDefaultValues: true}.Marshal(m)
	if err != nil {
		return nil
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// restCall posts body (raw JSON arguments) to POST /v1/tools/{tool}:call.
func restCall(ctx context.Context, base, token, tool string, body []byte, headers map[string]string) (outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/tools/"+tool+":call", bytes.NewReader(body))
	if err != nil {
		return outcome{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return outcome{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return outcome{}, err
	}
	o := outcome{HTTPStatus: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		o.Code, o.Message = "HTTP_ERROR", strings.TrimSpace(string(raw))
		return o, nil
	}
	if resp.StatusCode == http.StatusOK {
		o.Code, o.Result = "OK", m
		return o, nil
	}
	if e, ok := m["error"].(map[string]any); ok {
		m = e
	}
	o.Error = m
	o.Code, _ = m["code"].(string)
	o.Message, _ = m["message"].(string)
	if o.Code == "" {
		o.Code = "HTTP_ERROR"
	}
	return o, nil
}

// mcpClient is a minimal Streamable HTTP MCP client with one session.
type mcpClient struct {
	url, token, session, version string
	headers                      map[string]string
	// nextID numbers requests; the soak's callers share one client per
	// credential, as an agent's concurrent calls share its session.
	nextID atomic.Int64
}

// mcpHTTPError is an HTTP-level refusal of initialize (e.g. 401).
type mcpHTTPError struct {
	Status  int
	Message string
}

func (e *mcpHTTPError) Error() string {
	return fmt.Sprintf("initialize: HTTP %d %s", e.Status, e.Message)
}

// errNoMCP reports that /mcp is not mounted (the bridge has not landed).
var errNoMCP = fmt.Errorf("the MCP endpoint is not mounted")

// newMCPClient initializes a session on base+"/mcp" as token.
func newMCPClient(ctx context.Context, base, token string, headers map[string]string) (*mcpClient, error) {
	c := &mcpClient{url: base + "/mcp", token: token, headers: headers}
	status, msg, hdr, err := c.post(ctx, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"reliability","version":"1.0.0"}}}`))
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotFound {
		return nil, errNoMCP
	}
	if status != http.StatusOK || msg["result"] == nil {
		return nil, &mcpHTTPError{Status: status, Message: fmt.Sprint(msg)}
	}
	c.session = hdr.Get("Mcp-Session-Id")
	c.version, _ = msg["result"].(map[string]any)["protocolVersion"].(string)
	if _, _, _, err := c.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return nil, err
	}
	return c, nil
}

// post sends one raw JSON-RPC body and returns the HTTP status and the
// response message (the last JSON-RPC message of an event stream).
func (c *mcpClient) post(ctx context.Context, body []byte) (int, map[string]any, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	var msg map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				var m map[string]any
				if json.Unmarshal([]byte(strings.TrimSpace(data)), &m) == nil && (m["result"] != nil || m["error"] != nil) {
					msg = m
				}
			}
		}
		return resp.StatusCode, msg, resp.Header, sc.Err()
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return 0, nil, nil, err
	}
	_ = json.Unmarshal(raw, &msg)
	if msg == nil && len(bytes.TrimSpace(raw)) > 0 {
		msg = map[string]any{"body": string(raw)}
	}
	return resp.StatusCode, msg, resp.Header, nil
}

// callRaw sends tools/call with args as the raw JSON of params.arguments.
func (c *mcpClient) callRaw(ctx context.Context, tool string, args []byte) (outcome, error) {
	id := c.nextID.Add(1)
	name, _ := json.Marshal(tool)
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%s,"arguments":%s}}`, id, name, args)
	return c.send(ctx, body)
}

// send posts a whole raw JSON-RPC message and interprets the answer.
func (c *mcpClient) send(ctx context.Context, body []byte) (outcome, error) {
	status, msg, hdr, err := c.post(ctx, body)
	if err != nil {
		return outcome{}, err
	}
	o := outcome{HTTPStatus: status, RetryAfter: hdr.Get("Retry-After")}
	if e, ok := msg["error"].(map[string]any); ok {
		o.Code = "RPC_ERROR"
		if n, ok := e["code"].(float64); ok {
			o.RPCError = int(n)
		}
		o.Message, _ = e["message"].(string)
		return o, nil
	}
	res, ok := msg["result"].(map[string]any)
	if !ok {
		o.Code = "HTTP_ERROR"
		o.Message = fmt.Sprint(msg)
		return o, nil
	}
	sc, _ := res["structuredContent"].(map[string]any)
	if isErr, _ := res["isError"].(bool); isErr {
		o.Error = sc
		o.Code, _ = sc["code"].(string)
		o.Message, _ = sc["message"].(string)
		return o, nil
	}
	o.Code, o.Result = "OK", sc
	return o, nil
}

// callOn calls a tool with JSON arguments over transport tr as token. An
// MCP session refused at initialize is reported as that HTTP refusal
// (UNAUTHORIZED for 401), the way an MCP client sees it.
func callOn(ctx context.Context, conn grpc.ClientConnInterface, base, tr, token, tool string, args map[string]any, headers map[string]string) (outcome, error) {
	switch tr {
	case trGRPC:
		return grpcCall(ctx, conn, token, tool, args, headers)
	case trREST:
		body, err := json.Marshal(args)
		if err != nil {
			return outcome{}, err
		}
		return restCall(ctx, base, token, tool, body, headers)
	default:
		body, err := json.Marshal(args)
		if err != nil {
			return outcome{}, err
		}
		mc, err := newMCPClient(ctx, base, token, headers)
		var he *mcpHTTPError
		if errors.As(err, &he) {
			code := "HTTP_ERROR"
			if he.Status == http.StatusUnauthorized {
				code = "UNAUTHORIZED"
			}
			return outcome{Code: code, HTTPStatus: he.Status, Message: he.Message}, nil
		}
		if err != nil {
			return outcome{}, err
		}
		return mc.callRaw(ctx, tool, body)
	}
}

// httpClient is a client with a bound on every request.
var httpClient = &http.Client{Timeout: 60 * time.Second}

// mcpAvailable reports whether base serves /mcp; tests over MCP skip with
// a clear message until the bridge is mounted.
func mcpAvailable(tb testing.TB, base string) bool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := newMCPClient(ctx, base, "", nil)
	return !errors.Is(err, errNoMCP)
}
