package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/schema"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
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
	// reg is the registry the index was rendered from: a call pinned to a
	// version (_meta "toolsvc/version") runs the version its Get answers,
	// the pin rule of every transport.
	reg *registry.Registry
	// renderedByName is rendered by tool name, for the pages of tools/list.
	renderedByName map[string][]byte
	// errSchema is the derived ToolError schema, part of every outputSchema.
	errSchema schema.Schema
	// compact is the compaction every rendered tool had.
	compact compaction
	// resources are the resource providers of the registry's services.
	resources resourceIndex
}

func newToolIndex(reg *registry.Registry, compact compaction) (*toolIndex, error) {
	idx := &toolIndex{latest: reg.Latest(), byName: map[string]*registry.Tool{}, renderedByName: map[string][]byte{}, compact: compact}
	errSchema, err := schema.Derive((&toolsvcv1.ToolError{}).ProtoReflect().Descriptor(), schema.Options{})
	if err != nil {
		return nil, fmt.Errorf("mcpbridge: derive the ToolError schema: %w", err)
	}
	idx.errSchema = errSchema
	idx.reg = reg
	if idx.resources, err = newResourceIndex(reg); err != nil {
		return nil, err
	}
	for _, t := range idx.latest {
		var versions []string
		for _, v := range reg.Versions(t.Name) {
			versions = append(versions, v.Version)
		}
		b, err := renderCompact(t, errSchema, compact, versions...)
		if err != nil {
			return nil, fmt.Errorf("mcpbridge: render tool %s: %w", t.Name, err)
		}
		idx.add(t, b)
	}
	return idx, nil
}

// add indexes t, rendered as r.
func (idx *toolIndex) add(t *registry.Tool, r []byte) {
	idx.rendered = append(idx.rendered, r)
	idx.byName[t.Name] = t
	idx.renderedByName[t.Name] = r
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

// renderTool describes t for tools/list: the derived schemas (the
// outputSchema abridged, outputschema.go), the four hints, and every other ToolDefinition field (version, category,
// permissions, tags, cacheable, cacheTtl, rateLimit, deprecated, examples,
// sideEffect, tenantScoped, cost, ...) under _meta, with
// "toolsvc/versions", every version served (ascending), which a call
// pins with _meta "toolsvc/version".
func renderTool(t *registry.Tool, errSchema schema.Schema) ([]byte, error) {
	return renderCompact(t, errSchema, compaction{})
}

// metaVersions lists a tool's served versions in its tools/list _meta.
const metaVersions = "toolsvc/versions"

// renderCompact is renderTool with the description and schemas compacted
// as c says (nothing, by default).
func renderCompact(t *registry.Tool, errSchema schema.Schema, c compaction, versions ...string) ([]byte, error) {
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
	if len(versions) == 0 {
		versions = []string{t.Version}
	}
	if meta[metaVersions], err = json.Marshal(versions); err != nil {
		return nil, err
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	a := t.Def.GetAnnotations()
	input, output := listedInputSchema(t.InputSchema), listedOutputSchema(t.Name, t.OutputSchema, errSchema)
	if c.fullSchemas {
		input, output = t.InputSchema, outputSchema(t.OutputSchema, errSchema)
	}
	if c.stripSchema {
		input, output = stripSchema(input), stripSchema(output)
	}
	return json.Marshal(mcpTool{
		Name: t.Name, Title: t.Def.GetTitle(), Description: capDescription(t.Def.GetDescription(), c.descMax),
		InputSchema: input, OutputSchema: output,
		Annotations: toolAnnotations{
			Title: a.GetTitle(), ReadOnlyHint: a.GetReadOnlyHint(), DestructiveHint: a.GetDestructiveHint(),
			IdempotentHint: a.GetIdempotentHint(), OpenWorldHint: a.GetOpenWorldHint(),
		},
		Meta: mb,
	})
}

// errUnauthorized answers a listing whose caller the authenticator refused.
var errUnauthorized = &framing.Error{Code: CodeUnauthorized, Message: "unauthorized: missing or invalid credentials"}

const listToolsMethod = "/toolsvc.v1.ToolService/ListTools"

// maxListPage is the largest page ListTools serves.
const maxListPage = 1000

// listTools answers tools/list through ToolService.ListTools on the chain,
// which authenticates the caller and decides what it may see (with its
// tool-list cache, shared by every transport). The bridge only renders
// the page: each listed tool's MCP description, rendered once at start.
// The MCP cursor is ListTools' page token, passed through as it is.
func (b *Bridge) listTools(ctx context.Context, x *exchange, raw json.RawMessage) ([]byte, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if b.listSlots != nil {
		select {
		case b.listSlots <- struct{}{}:
			defer func() { <-b.listSlots }()
		case <-ctx.Done():
			return nil, protocolError(status.FromContextError(ctx.Err()).Err())
		}
	}
	cat := b.catalog.Load()
	req := &toolsvcv1.ListToolsRequest{PageToken: p.Cursor, PageSize: uint32(min(b.cfg.PageSize, maxListPage)), NamesOnly: true}
	out := &toolsvcv1.ListToolsResponse{}
	ctx = x.toChain(ctx, x.outgoing())
	if err := cat.lister().Invoke(ctx, listToolsMethod, req, out); err != nil {
		switch toolerr.Code(toolError(err).GetCode()) {
		case toolerr.Unauthorized:
			return nil, errUnauthorized
		case toolerr.InvalidInput:
			return nil, framing.InvalidParams("invalid params: cursor is not one returned by tools/list")
		}
		return nil, protocolError(err)
	}
	return cat.pages.page(cat.tools, out)
}

// renderPage builds the result of tools/list from a ListTools page:
// {"tools":[...],"nextCursor":"..."}, from the tools' rendered
// descriptions.
func (idx *toolIndex) renderPage(page *toolsvcv1.ListToolsResponse) ([]byte, error) {
	size := 64 + len(page.GetNextPageToken())
	for _, d := range page.GetTools() {
		size += len(idx.renderedByName[d.GetName()]) + 1
	}
	out := make([]byte, 0, size)
	out = append(out, `{"tools":[`...)
	for n, d := range page.GetTools() {
		r, ok := idx.renderedByName[d.GetName()]
		if !ok {
			return nil, fmt.Errorf("mcpbridge: ListTools listed %q, a tool the bridge has not rendered", d.GetName())
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	out = append(out, ']')
	if next := page.GetNextPageToken(); next != "" {
		out = append(out, `,"nextCursor":`...)
		out = framing.AppendJSONString(out, next)
	}
	// Clipped: a caller appending to the shared bytes must reallocate.
	return slices.Clip(append(out, '}')), nil
}

type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      struct {
		ProgressToken json.RawMessage `json:"progressToken"`
		// IdempotencyKey is the Idempotency-Key of the call, for clients
		// that cannot set headers (stdio); it wins over the header.
		IdempotencyKey *string `json:"idempotencyKey"`
		// Version pins the call to one version of the tool (docs/MCP.md,
		// "Tool versions"); absent, the highest version answers.
		Version *string `json:"toolsvc/version"`
	} `json:"_meta"`
	// RequestState and InputResponses make the call the follow-up of
	// one that asked for input (revision 2026-07-28, mrtr.go).
	RequestState   *string                    `json:"requestState"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// toolCall is a tools/call as the dispatcher hands it to callTool: its
// params decoded, and the revision's one decision for it (perRequest:
// whether it may run as a task and asks its client through its result).
type toolCall struct {
	params     callParams
	perRequest bool
}

// callTool answers tools/call through the chain.
func (b *Bridge) callTool(ctx context.Context, x *exchange, m *framing.Message, c *toolCall) ([]byte, error) {
	p, perRequest := &c.params, c.perRequest
	if p.Name == "" {
		return nil, framing.InvalidParams(`invalid params: "name" is required`)
	}
	// The bridge decides nothing about the tool: an unknown name goes to
	// ToolService.CallTool, and the chain answers it and a tool the
	// caller may not see alike (NOT_FOUND, audited as every transport's).
	idx := b.catalog.Load().tools
	t := idx.byName[p.Name]
	var version string
	if v := p.Meta.Version; v != nil {
		if *v == "" {
			return nil, framing.InvalidParams(`invalid params: _meta "toolsvc/version" must be a version such as "1.0.0"`)
		}
		// A pin no version answers goes to ToolService.CallTool with the
		// pin, and the chain answers it (NOT_FOUND naming the versions
		// served, or INVALID_INPUT for a malformed one).
		version = *v
		t, _ = idx.reg.Get(p.Name, version)
	}
	args := bytes.TrimSpace(p.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = nil
	} else if args[0] != '{' {
		return nil, framing.InvalidParams(`invalid params: "arguments" must be a JSON object`)
	}

	if p.RequestState != nil {
		return b.resume(ctx, x, m, p.Name, *p.RequestState, p.InputResponses)
	}
	md := x.outgoing()
	if k := p.Meta.IdempotencyKey; k != nil {
		md = md.Copy()
		md.Set(wire.HeaderIdempotencyKey, *k)
	}
	// The revision has decided whether the call may run as a task (only
	// for an authenticated caller, the task's owner) and how it asks its
	// client.
	if perRequest && x.principal != nil && runsAsTask(t) && declaresTasks(m.Params) {
		if created, ok, err := b.startTask(x, t, p.Name, version, args, md); ok {
			return created, err
		}
	}
	if perRequest {
		if caps := modernAskCaps(m.Params); caps.askable() {
			// A client that can be asked: the call may outlive this
			// request (mrtr.go).
			return b.callAsking(ctx, x, m, t, p.Name, version, args, md, caps, p.Meta.ProgressToken)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer b.track(x, m.ID, cancel)()
	ctx = x.toChain(ctx, md)
	if tok := p.Meta.ProgressToken; framing.ValidID(tok) && x.notify != nil {
		ctx = callctx.WithProgress(ctx, progressReporter(x, tok))
	}
	if perRequest {
		ctx = callctx.WithAsker(ctx, modernAsker{})
	} else {
		x.bridge = b
		ctx = callctx.WithAsker(ctx, (*exchangeAsker)(x))
	}

	start := time.Now()
	sc, buf, callErr := b.invoke(ctx, t, p.Name, version, args)
	if buf != nil {
		defer scratch.Put(buf)
	}
	return b.outcome(x, p.Name, start, sc, callErr)
}

// modernAskCaps reads the capabilities of a modern request's _meta, where
// they lie (no decoding of the params: most calls declare neither).
func modernAskCaps(params json.RawMessage) askCaps {
	if !bytes.Contains(params, []byte(`"elicitation"`)) && !bytes.Contains(params, []byte(`"sampling"`)) {
		return askCaps{}
	}
	return parseAskCaps(jsonrpc.Member(jsonrpc.Member(params, "_meta"), metaClientCapabilities))
}

// outcome turns what invoke returned for tool name into the CallToolResult
// (a copy: sc may be a scratch buffer), or the protocol error the chain's
// answer means in MCP.
func (b *Bridge) outcome(x *exchange, name string, start time.Time, sc []byte, callErr error) ([]byte, error) {
	var re *framing.Error
	if errors.As(callErr, &re) {
		return nil, re
	}
	if callErr != nil && unknownTool(callErr, name) {
		// A protocol fault in MCP (docs/ARCHITECTURE.md, Errors): the chain decided and
		// audited it; the bridge only words it as JSON-RPC.
		// The chain's NOT_FOUND carries agent hints (list the tools); they
		// go in the error's data so an agent still has a next step.
		re := &framing.Error{Code: CodeInvalidParams, Message: fmt.Sprintf("unknown tool: %q", name)}
		st, _ := status.FromError(callErr)
		if h := toolerr.FromStatus(st).GetAgentHints(); h != nil {
			if raw, err := protojson.Marshal(h); err == nil {
				re.Data = map[string]any{"code": toolerr.NotFound, "agentHints": json.RawMessage(raw)}
			}
		}
		return nil, re
	}
	// The call's log message goes only where a notification can (not in
	// a plain JSON answer: logf would drop it unbuilt).
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
		if x.notify != nil {
			b.logf(x, level, map[string]any{"tool": name, "code": te.GetCode(), "message": te.GetMessage(), "traceId": te.GetTraceId()})
		}
	} else if x.notify != nil {
		b.logf(x, "debug", map[string]any{"tool": name, "durationMs": time.Since(start).Milliseconds()})
	}
	return toolResult(sc, isError), nil
}

// unknownTool reports whether err is the chain's answer to a tool that
// does not exist for the caller (missing, or one it may not see:
// toolerr.UnknownTool). A tool's own NOT_FOUND (a memory id, a removed
// tool) is a tool result instead, and so is an upstream's answer naming
// another tool.
func unknownTool(err error, name string) bool {
	te := toolError(err)
	return toolerr.IsUnknownTool(te) && te.GetDetails().GetFields()["tool"].GetStringValue() == name
}

// invoke runs the tool called name on the channel; t is its registry
// entry, nil when the bridge knows no such tool (or no such version:
// version, when not empty, is the one the caller pinned). Arguments that decode
// into the typed request take the tool's own method; anything else (and
// any unknown name) goes through ToolService.CallTool as a Struct, so that
// the chain reports the problem in its order (credentials first, then
// NOT_FOUND for the tool, then INVALID_INPUT with the field).
// The result is in a scratch buffer, buf, when not nil.
func (b *Bridge) invoke(ctx context.Context, t *registry.Tool, name, version string, args []byte) (result []byte, buf *[]byte, err error) {
	if t != nil {
		in := t.Input.New().Interface()
		if args == nil || strictJSON.Unmarshal(args, in) == nil {
			out := t.Output.New().Interface()
			slot := &callctx.RenderSlot{}
			if err := b.cfg.Channel.Invoke(callctx.WithRenderSlot(ctx, slot), t.FullMethod, in, out); err != nil {
				return nil, nil, err
			}
			return marshalOnce(slot, out)
		}
	}
	st := &structpb.Struct{}
	if args != nil {
		if err := protojson.Unmarshal(args, st); err != nil {
			return nil, nil, framing.InvalidParams(`invalid params: "arguments" is not a JSON object`)
		}
	}
	out := &toolsvcv1.CallToolResponse{}
	req := &toolsvcv1.CallToolRequest{Name: name, Arguments: st, Version: version}
	if t != nil {
		// Exactly the version resolved: a compatible pin could answer
		// with a newer one.
		req.Version = "=" + t.Version
	}
	slot := &callctx.RenderSlot{}
	if err := b.cfg.Channel.Invoke(callctx.WithRenderSlot(ctx, slot), callToolMethod, req, out); err != nil {
		return nil, nil, err
	}
	return marshalOnce(slot, out)
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
	out = framing.AppendJSONString(out, sc)
	out = append(out, `}],"structuredContent":`...)
	out = append(out, sc...)
	if isError {
		out = append(out, `,"isError":true}`...)
	} else {
		out = append(out, `,"isError":false}`...)
	}
	return out
}

// toChain is ctx for a call of the chain on x's behalf: an MCP call whose
// metadata is md, carrying the principal the bridge already authenticated
// (callctx.WithAuthenticated), so that the chain verifies the credential
// no second time.
func (x *exchange) toChain(ctx context.Context, md metadata.MD) context.Context {
	ctx = callctx.WithTransport(ctx, callctx.TransportMCP)
	if x.principal != nil {
		ctx = callctx.WithAuthenticated(ctx, &x.caller)
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// outgoing builds the metadata of a call: the forwarded headers, with agent
// id and version defaulting to the client's clientInfo from initialize.
func (x *exchange) outgoing() metadata.MD {
	md := x.md
	if x.peer == nil {
		return md
	}
	name, version := x.peer.client()
	if name == "" {
		return md
	}
	if len(md.Get(wire.HeaderAgentID)) == 0 || (version != "" && len(md.Get(wire.HeaderAgentVersion)) == 0) {
		md = md.Copy()
		if len(md.Get(wire.HeaderAgentID)) == 0 {
			md.Set(wire.HeaderAgentID, name)
		}
		if version != "" && len(md.Get(wire.HeaderAgentVersion)) == 0 {
			md.Set(wire.HeaderAgentVersion, version)
		}
	}
	return md
}

// progressReporter turns the tool's progress into notifications/progress
// for token. Progress must increase (MCP), so repeats are dropped.
func progressReporter(x *exchange, token json.RawMessage) callctx.ProgressFunc {
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
		x.notify(framing.EncodeNotification("notifications/progress", p))
	}
}
