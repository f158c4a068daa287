package toolsvc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/toolsvc/toolsvc/bench/internal/drivers"
	"github.com/toolsvc/toolsvc/bench/internal/load"
)

// Transports the load tool drives.
const (
	GRPC         = "grpc"
	REST         = "rest"
	MCPStateful  = "mcp-stateful"
	MCPStateless = "mcp-stateless"
	// MCP2026 is MCP revision 2026-07-28: no session, _meta and the
	// Mcp-Method/Mcp-Name headers on every call.
	MCP2026 = "mcp-2026"
)

// ErrTransport is returned for a transport not among the constants above.
var ErrTransport = errors.New("toolsvc: unknown transport")

// Endpoint is where a toolsvc listens and how to call it.
type Endpoint struct {
	// GRPCAddr is host:port of the gRPC listener.
	GRPCAddr string
	// HTTPBase is the base URL of the HTTP listener, e.g. http://127.0.0.1:8080.
	HTTPBase string
	// Keys are API keys to rotate over (none: development mode).
	Keys []string
}

// Target builds a load target calling t over transport with args (JSON
// objects, rotated) for up to concurrency workers. close releases it.
func (t Tool) Target(transport string, ep Endpoint, args []json.RawMessage, concurrency int) (target load.Target, closeFn func(), err error) {
	if len(args) == 0 {
		args = []json.RawMessage{json.RawMessage("{}")}
	}
	switch transport {
	case GRPC:
		if err := drivers.CheckLoopback(ep.GRPCAddr); err != nil {
			return nil, nil, err
		}
		reqs := make([]proto.Message, len(args))
		for i, a := range args {
			reqs[i] = t.Input.New().Interface()
			if err := protojson.Unmarshal(a, reqs[i]); err != nil {
				return nil, nil, fmt.Errorf("toolsvc: arguments %d for %s: %w", i, t.Name, err)
			}
		}
		conn, err := grpc.NewClient(ep.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, nil, err
		}
		return drivers.NewGRPC(conn, t.FullMethod, reqs, t.Output, ep.Keys), func() { _ = conn.Close() }, nil
	case REST:
		client := drivers.NewHTTPClient(concurrency)
		method, url, bodies, err := t.restCall(ep.HTTPBase, args)
		if err != nil {
			return nil, nil, err
		}
		d, err := drivers.NewREST(client, method, url, bodies, ep.Keys)
		return d, client.CloseIdleConnections, err
	case MCPStateful, MCPStateless:
		client := drivers.NewHTTPClient(concurrency)
		d, err := drivers.NewMCP(client, strings.TrimSuffix(ep.HTTPBase, "/")+"/mcp", t.Name, args, ep.Keys, transport == MCPStateful)
		return d, client.CloseIdleConnections, err
	case MCP2026:
		client := drivers.NewHTTPClient(concurrency)
		d, err := drivers.NewMCPModern(client, strings.TrimSuffix(ep.HTTPBase, "/")+"/mcp", t.Name, args, ep.Keys)
		return d, client.CloseIdleConnections, err
	}
	return nil, nil, fmt.Errorf("%w %q", ErrTransport, transport)
}

// restCall picks the typed route when the arguments fit it (a POST with
// body "*", or a GET with no arguments), else the generic seed route
// POST /api/mcp/tool/call.
func (t Tool) restCall(base string, args []json.RawMessage) (method, url string, bodies [][]byte, err error) {
	base = strings.TrimSuffix(base, "/")
	empty := true
	for _, a := range args {
		var m map[string]any
		if err := json.Unmarshal(a, &m); err != nil {
			return "", "", nil, fmt.Errorf("toolsvc: arguments are not a JSON object: %w", err)
		}
		empty = empty && len(m) == 0
	}
	switch {
	case t.RESTMethod == http.MethodPost:
		for _, a := range args {
			bodies = append(bodies, a)
		}
		return http.MethodPost, base + t.RESTPath, bodies, nil
	case t.RESTMethod == http.MethodGet && empty:
		return http.MethodGet, base + t.RESTPath, nil, nil
	}
	for _, a := range args {
		b, _ := json.Marshal(map[string]any{"toolName": t.Name, "input": a})
		bodies = append(bodies, b)
	}
	return http.MethodPost, base + "/api/mcp/tool/call", bodies, nil
}
