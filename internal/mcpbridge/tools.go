package mcpbridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/registry"
	"github.com/toolsvc/toolsvc/internal/schema"
	"github.com/toolsvc/toolsvc/internal/toolerr"
)

// resultJSON renders results as agents read them: lowerCamelCase names,
// empty lists and zero values present, as on every transport.
var resultJSON = protojson.MarshalOptions{EmitDefaultValues: true}

// strictJSON decodes arguments: unknown fields and wrong types fail.
var strictJSON = protojson.UnmarshalOptions{}

const callToolMethod = "/toolsvc.v1.ToolService/CallTool"

// toolIndex is the latest version of every tool, rendered once as an MCP
// tool description.
type toolIndex struct {
	latest   []*registry.Tool
	rendered [][]byte
	byName   map[string]*registry.Tool
	// errSchema is the derived ToolError schema, part of every outputSchema.
	errSchema schema.Schema
}

func newToolIndex(reg *registry.Registry) (*toolIndex, error) {
	idx := &toolIndex{latest: reg.Latest(), byName: map[string]*registry.Tool{}}
	errSchema, err := schema.Derive((&toolsvcv1.ToolError{}).ProtoReflect().Descriptor(), schema.Options{})
	if err != nil {
		return nil, fmt.Errorf("mcpbridge: derive the ToolError schema: %w", err)
	}
	idx.errSchema = errSchema
	for _, t := range idx.latest {
		b, err := renderTool(t, errSchema)
		if err != nil {
			return nil, fmt.Errorf("mcpbridge: render tool %s: %w", t.Name, err)
		}
		idx.rendered = append(idx.rendered, b)
		idx.byName[t.Name] = t
	}
	return idx, nil
}

// toolAnnotations are MCP's tool hints, every one written out.
type toolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

type mcpTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  map[string]any  `json:"inputSchema"`
	OutputSchema map[string]any  `json:"outputSchema"`
	Annotations  toolAnnotations `json:"annotations"`
	Meta         json.RawMessage `json:"_meta"`
}

// renderTool describes t for tools/list: the derived schemas, the four
// hints, and every other ToolDefinition field (version, category,
// permissions, tags, cacheable, cacheTtl, rateLimit, deprecated, examples,
// sideEffect, tenantScoped, cost, ...) under _meta.
func renderTool(t *registry.Tool, errSchema schema.Schema) ([]byte, error) {
	def, err := resultJSON.Marshal(t.Def)
	if err != nil {
		return nil, err
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(def, &meta); err != nil {
		return nil, err
	}
	for _, k := range []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"} {
		delete(meta, k)
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	a := t.Def.GetAnnotations()
	return json.Marshal(mcpTool{
		Name: t.Name, Title: t.Def.GetTitle(), Description: t.Def.GetDescription(),
		InputSchema: t.InputSchema, OutputSchema: outputSchema(t.OutputSchema, errSchema),
		Annotations: toolAnnotations{
			Title: a.GetTitle(), ReadOnlyHint: a.GetReadOnlyHint(), DestructiveHint: a.GetDestructiveHint(),
			IdempotentHint: a.GetIdempotentHint(), OpenWorldHint: a.GetOpenWorldHint(),
		},
		Meta: mb,
	})
}

// outputSchema is what tools/list advertises as a tool's outputSchema:
// its derived result schema, or the ToolError of an isError result. MCP
// clients (the TypeScript SDK among them) validate structuredContent
// against outputSchema even when isError is set, and toolsvc's error
// results carry the ToolError there so that a model can fix its call.
func outputSchema(result, toolError schema.Schema) map[string]any {
	r, e := maps.Clone(result), maps.Clone(toolError)
	delete(r, "$schema")
	delete(e, "$schema")
	if d, _ := e["description"].(string); d == "" {
		e["description"] = "The error of a result with isError: true."
	}
	return map[string]any{
		"$schema":     schema.Draft202012,
		"type":        "object",
		"description": "The tool's result {data, agentHints, metadata}, or a ToolError when isError is true.",
		"anyOf":       []any{r, e},
	}
}

// errUnauthorized answers a listing whose caller the authenticator refused.
var errUnauthorized = &rpcError{Code: CodeUnauthorized, Message: "unauthorized: missing or invalid credentials"}

// listTools answers tools/list: the tools the caller may call, a page at a
// time, from the rendered pages of the list cache (shared bytes: the
// response is written around them, never into them).
func (b *Bridge) listTools(x *exchange, raw json.RawMessage) ([]byte, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if x.principal == nil {
		return nil, errUnauthorized
	}
	page, ok := b.catalog.Load().list.page(x.principal, p.Cursor)
	if !ok {
		return nil, errInvalidParams("invalid params: cursor is not one returned by tools/list")
	}
	return page, nil
}

func encodeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("tools:" + strconv.Itoa(offset)))
}

// decodeCursor returns the offset of a cursor; "" is the first page.
func decodeCursor(c string, n int) (int, bool) {
	if c == "" {
		return 0, true
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !bytes.HasPrefix(b, []byte("tools:")) {
		return 0, false
	}
	off, err := strconv.Atoi(string(b[len("tools:"):]))
	if err != nil || off <= 0 || off >= n {
		return 0, false
	}
	return off, true
}

type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"_meta"`
}

// callTool answers tools/call through the chain.
func (b *Bridge) callTool(ctx context.Context, x *exchange, m *message) ([]byte, error) {
	var p callParams
	if err := params(m.Params, &p); err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, errInvalidParams(`invalid params: "name" is required`)
	}
	t, ok := b.catalog.Load().tools.byName[p.Name]
	// A tool the caller may not see is as unknown as a missing one: only
	// tools from tools/list are callable (seed 001).
	if !ok || (x.principal != nil && !interceptors.Visible(x.principal, t)) {
		return nil, &rpcError{Code: CodeInvalidParams, Message: fmt.Sprintf("unknown tool: %q", p.Name)}
	}
	args := bytes.TrimSpace(p.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = nil
	} else if args[0] != '{' {
		return nil, errInvalidParams(`invalid params: "arguments" must be a JSON object`)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer b.track(x, m.ID, cancel)()
	ctx = interceptors.WithTransport(ctx, interceptors.TransportMCP)
	ctx = metadata.NewOutgoingContext(ctx, x.outgoing())
	if tok := p.Meta.ProgressToken; validID(tok) && x.notify != nil {
		ctx = interceptors.WithProgress(ctx, progressReporter(x, tok))
	}

	start := time.Now()
	sc, buf, callErr := b.invoke(ctx, t, args)
	if buf != nil {
		defer scratch.Put(buf)
	}
	var re *rpcError
	if errors.As(callErr, &re) {
		return nil, callErr
	}
	isError := callErr != nil
	if isError {
		st, _ := status.FromError(callErr)
		te := toolerr.FromStatus(st)
		var err error
		if sc, err = resultJSON.Marshal(te); err != nil {
			return nil, err
		}
		level := "warning"
		if te.GetCode() == string(toolerr.Internal) {
			level = "error"
		}
		b.logf(x, level, map[string]any{"tool": t.Name, "code": te.GetCode(), "message": te.GetMessage(), "traceId": te.GetTraceId()})
	} else {
		b.logf(x, "debug", map[string]any{"tool": t.Name, "durationMs": time.Since(start).Milliseconds()})
	}
	return toolResult(sc, isError), nil
}

// invoke runs t on the channel. Arguments that decode into the typed
// request take the tool's own method; anything else goes through
// ToolService.CallTool as a Struct, so that the chain reports the problem
// in its order (credentials first, then INVALID_INPUT with the field).
// The result is in a scratch buffer, buf, when not nil.
func (b *Bridge) invoke(ctx context.Context, t *registry.Tool, args []byte) (result []byte, buf *[]byte, err error) {
	in := t.Input.New().Interface()
	if args == nil || strictJSON.Unmarshal(args, in) == nil {
		out := t.Output.New().Interface()
		if err := b.cfg.Channel.Invoke(ctx, t.FullMethod, in, out); err != nil {
			return nil, nil, err
		}
		return marshalResult(out)
	}
	st := &structpb.Struct{}
	if err := protojson.Unmarshal(args, st); err != nil {
		return nil, nil, errInvalidParams(`invalid params: "arguments" is not a JSON object`)
	}
	out := &toolsvcv1.CallToolResponse{}
	req := &toolsvcv1.CallToolRequest{Name: t.Name, Version: t.Version, Arguments: st}
	if err := b.cfg.Channel.Invoke(ctx, callToolMethod, req, out); err != nil {
		return nil, nil, err
	}
	return marshalResult(out)
}

// scratch holds the buffers results are rendered into before
// toolResult copies them (twice) into the response: reused, they spare
// protojson growing a new buffer on every call.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// marshalResult renders m as resultJSON would (appendResult, or
// protojson for what that leaves to it) into a scratch buffer (*buf,
// which the caller returns to scratch once done with the result).
func marshalResult(m proto.Message) (result []byte, buf *[]byte, err error) {
	buf = scratch.Get().(*[]byte)
	b, ok := appendResult((*buf)[:0], m.ProtoReflect())
	if !ok {
		b, err = resultJSON.MarshalAppend((*buf)[:0], m)
	}
	if err != nil {
		scratch.Put(buf)
		return nil, nil, status.Error(toolerr.Internal.GRPCCode(), "internal error: result is not serializable")
	}
	if cap(b) <= 64<<10 { // a huge result's buffer is left to the GC
		*buf = b
	}
	return b, buf, nil
}

// toolResult renders a CallToolResult: structuredContent, and the same
// JSON as the text item of content for clients that read only text. sc is
// encoded once, and copied in twice: raw, and as a JSON string.
func toolResult(sc []byte, isError bool) []byte {
	// The string's escapes: protojson writes control characters escaped
	// and valid UTF-8, so only quotes and backslashes grow.
	escapes := bytes.Count(sc, []byte{'"'}) + bytes.Count(sc, []byte{'\\'})
	out := make([]byte, 0, 2*len(sc)+escapes+96)
	out = append(out, `{"content":[{"type":"text","text":`...)
	out = appendJSONString(out, sc)
	out = append(out, `}],"structuredContent":`...)
	out = append(out, sc...)
	if isError {
		out = append(out, `,"isError":true}`...)
	} else {
		out = append(out, `,"isError":false}`...)
	}
	return out
}

// progressReporter turns the tool's progress into notifications/progress
// for token. Progress must increase (MCP), so repeats are dropped.
func progressReporter(x *exchange, token json.RawMessage) interceptors.ProgressFunc {
	var (
		mu   sync.Mutex
		last = -1.0
	)
	return func(done, total float64, message string) {
		mu.Lock()
		defer mu.Unlock()
		if done <= last {
			return
		}
		last = done
		p := map[string]any{"progressToken": token, "progress": done}
		if total > 0 {
			p["total"] = total
		}
		if message != "" {
			p["message"] = message
		}
		x.notify(encodeNotification("notifications/progress", p))
	}
}
