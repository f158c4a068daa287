package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// the /api/mcp routes (docs/REST.md, Routes).
const (
	pathAPIMCPHealth = PrefixAPIMCP + "health"
	pathAPIMCPTools  = PrefixAPIMCP + "tools"
	pathAPIMCPCall   = PrefixAPIMCP + "tool/call"
)

// serveAPIMCP serves the /api/mcp routes (docs/REST.md, Routes), through the same channel and chain
// as every other call.
func (g *Gateway) serveAPIMCP(w http.ResponseWriter, r *http.Request) {
	var method string
	var serve func(http.ResponseWriter, *http.Request)
	switch r.URL.Path {
	case pathAPIMCPHealth:
		method, serve = http.MethodGet, g.apiMCPHealth
	case pathAPIMCPTools:
		method, serve = http.MethodGet, g.apiMCPTools
	case pathAPIMCPCall:
		method, serve = http.MethodPost, g.apiMCPCall
	default:
		g.writeError(w, r, notFound(r))
		return
	}
	if r.Method != method {
		g.writeError(w, r, methodNotAllowed(r, []string{method}))
		return
	}
	serve(w, r)
}

// apiMCPHealth is GET /api/mcp/health: {"status": "ok", "timestamp": ...},
// or 503 with "unavailable" once the server is shutting down.
func (g *Gateway) apiMCPHealth(w http.ResponseWriter, r *http.Request) {
	resp, err := healthpb.NewHealthClient(g.conn).Check(r.Context(), &healthpb.HealthCheckRequest{})
	state, code := "ok", http.StatusOK
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		state, code = "unavailable", http.StatusServiceUnavailable
	}
	body, _ := json.Marshal(map[string]string{
		"status":    state,
		"timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
	})
	writeJSON(w, code, body)
}

// apiMCPTools is GET /api/mcp/tools: {"tools": [ToolDefinition...]}, the
// tools the caller may see (ListTools, every page).
func (g *Gateway) apiMCPTools(w http.ResponseWriter, r *http.Request) {
	ctx := metadata.NewOutgoingContext(r.Context(), g.cfg.MetadataHeaders.ToMetadata(r.Header))
	client := toolsvcv1.NewToolServiceClient(g.conn)
	parts := [][]byte{[]byte(`{"tools":[`)}
	req := &toolsvcv1.ListToolsRequest{}
	for n := 0; ; {
		resp, err := client.ListTools(ctx, req)
		if err != nil {
			g.writeError(w, r, err)
			return
		}
		for _, def := range resp.GetTools() {
			b, err := marshalJSON(def)
			if err != nil {
				g.writeError(w, r, err)
				return
			}
			if n > 0 {
				parts = append(parts, []byte(","))
			}
			parts = append(parts, b)
			n++
		}
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	writeJSON(w, http.StatusOK, append(parts, []byte(`]}`))...)
}

// apiMCPCallFields are the members of a /api/mcp call body.
var apiMCPCallFields = []string{"arguments", "input", "toolName", "version"}

// apiMCPCall is POST /api/mcp/tool/call with {"toolName", "input"}
// ("arguments" is accepted instead of "input", not both; "version" picks
// a version): {"result": {data, agentHints, metadata}}.
func (g *Gateway) apiMCPCall(w http.ResponseWriter, r *http.Request) {
	body, err := g.readBody(w, r)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	req, err := decodeSeedCall(body)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	ctx := metadata.NewOutgoingContext(r.Context(), g.cfg.MetadataHeaders.ToMetadata(r.Header))
	resp, err := toolsvcv1.NewToolServiceClient(g.conn).CallTool(ctx, req)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	b, err := marshalJSON(resp)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, []byte(`{"result":`), b, []byte(`}`))
}

// decodeSeedCall decodes a /api/mcp call body strictly: exactly the known
// members, with the right JSON types.
func decodeSeedCall(body []byte) (*toolsvcv1.CallToolRequest, error) {
	if len(body) == 0 {
		return nil, invalid(http.StatusBadRequest, "toolName", "required", "the body must be a JSON object with toolName and input")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil || members == nil {
		return nil, invalid(http.StatusBadRequest, "", "", "the body must be a JSON object with toolName and input")
	}
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(apiMCPCallFields, k) {
			return nil, invalid(http.StatusBadRequest, k, "json.unknown_field", "unknown field %q: want toolName, input (or arguments) and version", k)
		}
	}
	req := &toolsvcv1.CallToolRequest{}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"toolName", &req.Name}, {"version", &req.Version}} {
		raw, ok := members[f.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			return nil, invalid(http.StatusBadRequest, f.name, "json.type", "%s must be a string", f.name)
		}
	}
	if req.GetName() == "" {
		return nil, invalid(http.StatusBadRequest, "toolName", "required", "toolName is required")
	}
	name := "input"
	input, hasInput := members[name]
	if args, ok := members["arguments"]; ok {
		if hasInput {
			return nil, invalid(http.StatusBadRequest, "arguments", "oneof", "give input or arguments, not both")
		}
		name, input, hasInput = "arguments", args, true
	}
	if input = bytes.TrimSpace(input); hasInput && string(input) != "null" {
		req.Arguments = &structpb.Struct{}
		if input[0] != '{' || protojson.Unmarshal(input, req.Arguments) != nil {
			return nil, invalid(http.StatusBadRequest, name, "json.type", "%s must be a JSON object", name)
		}
	}
	return req, nil
}
