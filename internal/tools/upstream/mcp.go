package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// maxListPages bounds the pages of an MCP server's tools/list.
const maxListPages = 100

// loadMCP reads an MCP server's tools/list, checks every tool against
// the tool contract (docs/CONTRACTS.md) and builds the service of those that pass; the
// others are refused with their rule.
func (u *Upstream) loadMCP(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	listed, err := u.listTools(ctx)
	if err != nil {
		return err
	}
	var tools []*mcpTool
	seen := map[string]bool{}
	for _, d := range listed {
		if seen[d.Name] {
			u.refused = append(u.refused, RefusedTool{Tool: d.Name, Rule: RuleMCPName, Message: "the server lists this name twice"})
			continue
		}
		seen[d.Name] = true
		t, refusals := u.checkListed(d)
		if t == nil {
			u.refused = append(u.refused, refusals...)
			continue
		}
		tools = append(tools, t)
	}
	tools = u.uniqueNames(tools)
	tools = u.pinned(ctx, tools)
	u.names = map[string]string{}
	for _, t := range tools {
		u.names[t.desc.Name] = t.listed
	}
	fed, err := u.federatedTools()
	if err != nil {
		return err
	}
	tools = u.withFederated(tools, fed)
	for name := range u.cfg.overlays {
		if !seen[name] {
			return fmt.Errorf("overlay %s: the server lists no such tool", name)
		}
	}
	for name := range u.cfg.Naming.Renames {
		if !seen[name] {
			return fmt.Errorf("naming.renames[%s]: the server lists no such tool", name)
		}
	}
	if len(tools) == 0 {
		if len(u.refused) > 0 {
			return nil // every tool refused: /healthz and lint say why
		}
		return errors.New("the server lists no tool")
	}
	fd := mcpFile(u.cfg.Name, tools)
	files, err := register([]*descriptorpb.FileDescriptorProto{fd}, map[string]*descriptorpb.FileDescriptorProto{fd.GetName(): fd}, nil)
	if err != nil {
		return fmt.Errorf("tool descriptors: %w", err)
	}
	svcName := fd.GetPackage() + ".Tools"
	d, err := files.FindDescriptorByName(protoreflect.FullName(svcName))
	if err != nil {
		return err
	}
	sd := d.(protoreflect.ServiceDescriptor)
	desc := &grpc.ServiceDesc{ServiceName: svcName, HandlerType: (*any)(nil)}
	contracts := map[string]registry.JSONContract{}
	for _, t := range tools {
		t.envelope = sd.Methods().ByName(protoreflect.Name(t.method)).Output()
		desc.Methods = append(desc.Methods, grpc.MethodDesc{MethodName: t.method, Handler: u.mcpHandler(t, "/"+svcName+"/"+t.method)})
		contracts[t.method] = registry.JSONContract{Input: withoutDialect(t.input), Output: withoutDialect(t.output), Check: t.checkInput}
		u.methods++
	}
	svc := registry.Service{Desc: desc, Impl: u, Files: files, Source: SourcePrefix + u.cfg.Name, Contracts: contracts, Verbs: u.cfg.Verbs}
	svc.Resources, svc.Prompts = u.federatedProviders("/"+svcName+"/", fed)
	u.services = append(u.services, svc)
	return nil
}

// listTools reads the server's tools/list, every page, or the listing a
// 2026 server said may be kept (ttlMs, the least of its pages') while it
// may and the server has not said its list changed: a refresh for another
// reason (an approval) then reads no new definition behind the cache's back.
func (u *Upstream) listTools(ctx context.Context) ([]mcpToolDesc, error) {
	if l := u.listing; l != nil && !u.listStale.Load() && time.Now().Before(l.until) {
		return l.tools, nil
	}
	u.listStale.Store(false)
	u.listing = nil
	var listed []mcpToolDesc
	cursor := ""
	ttl := int64(-1)
	for page := 0; ; page++ {
		if page == maxListPages {
			return nil, fmt.Errorf("tools/list: more than %d pages", maxListPages)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := u.mcp.call(ctx, "tools/list", params, nil)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		var out struct {
			Tools      []mcpToolDesc `json:"tools"`
			NextCursor string        `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &out); err != nil {
			return nil, fmt.Errorf("tools/list: %w: the result does not decode", errMalformedMessage)
		}
		var pageTTL int64
		if raw := jsonrpc.Member(res, "ttlMs"); raw == nil || json.Unmarshal(raw, &pageTTL) != nil || pageTTL < 0 {
			pageTTL = 0
		}
		if ttl < 0 || pageTTL < ttl {
			ttl = pageTTL
		}
		listed = append(listed, out.Tools...)
		if out.NextCursor == "" {
			break
		}
		cursor = out.NextCursor
	}
	if ttl > 0 && u.mcp.revision() == Revision2026 {
		u.listing = &toolListing{tools: listed, until: time.Now().Add(time.Duration(ttl) * time.Millisecond)}
	}
	return listed, nil
}

// toolListing is a 2026 server's tools/list kept for its ttlMs.
type toolListing struct {
	tools []mcpToolDesc
	until time.Time
}

// withoutDialect drops $schema, so that the schema nests in the result's.
func withoutDialect(s map[string]any) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		if k != "$schema" {
			out[k] = v
		}
	}
	return out
}

// mcpHandler is the grpc.MethodHandler of one upstream MCP tool, as
// handler is for a gRPC upstream's.
func (u *Upstream) mcpHandler(t *mcpTool, fullMethod string) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		req := &structpb.Struct{}
		if err := dec(req); err != nil {
			return nil, toolerr.Wrap(err, toolerr.InvalidInput, "the arguments do not decode")
		}
		run := u.callMCP
		if t.op != 0 {
			run = u.callFederated
		}
		if interceptor == nil {
			return u.guard(ctx, func() (proto.Message, error) { return run(ctx, t, req) })
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: fullMethod}
		return interceptor(ctx, req, info, func(ctx context.Context, req any) (any, error) {
			return u.guard(ctx, func() (proto.Message, error) { return run(ctx, t, req.(proto.Message)) })
		})
	}
}

// callMCP calls the tool on the upstream with the principal as explicit
// _meta (and HTTP headers), never the caller's credential, and checks
// the result against the tool's outputSchema: a result that does not
// conform is an error, never data.
func (u *Upstream) callMCP(ctx context.Context, t *mcpTool, req proto.Message) (proto.Message, error) {
	facts := callctx.From(ctx)
	if facts == nil {
		return nil, toolerr.New(toolerr.Internal, "internal error: upstream tool called outside the chain")
	}
	md, err := u.outgoing(ctx, facts)
	if err != nil {
		return nil, err
	}
	meta := map[string]any{}
	for k, vs := range md {
		if k == "authorization" || len(vs) == 0 {
			continue
		}
		switch k {
		case MDTraceparent:
			meta["traceparent"] = vs[0]
			continue
		case MDCorrelation:
			meta["toolsvc/correlation-id"] = vs[0]
			continue
		}
		meta["toolsvc/"+strings.TrimPrefix(k, MDIDPrefix)] = vs[0]
	}
	args, err := protojson.Marshal(req)
	if err != nil {
		return nil, toolerr.Wrap(err, toolerr.InvalidInput, "the arguments do not encode as JSON")
	}
	ctx, cancel := withCallClock(ctx, u.cfg.Timeout)
	defer cancel()
	hdr := principalHeaders(md)
	if u.cfg.UserCredential.Required || u.cfg.TokenExchange != nil { // the caller's own credential, in place of toolsvc's
		hdr.Set("Authorization", md.Get("authorization")[0])
	}
	res, err := u.mcp.call(ctx, "tools/call", map[string]any{"name": t.listed, "arguments": json.RawMessage(args), "_meta": meta}, hdr)
	if err != nil {
		return nil, u.mapMCPError(ctx, err)
	}
	var out struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           json.RawMessage `json:"content"`
		IsError           bool            `json:"isError"`
		Meta              struct {
			AgentHints json.RawMessage `json:"toolsvc/agentHints"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return nil, u.malformed(err, "the tools/call result does not decode")
	}
	if out.IsError {
		return nil, u.toolFailed(out.StructuredContent)
	}
	if o := u.cfg.mcpOverlays[t.listed]; o != nil && o.contentAsData && (len(out.StructuredContent) == 0 || string(out.StructuredContent) == "null") {
		out.StructuredContent = contentData(out.Content)
	}
	if len(out.StructuredContent) == 0 || string(out.StructuredContent) == "null" {
		return nil, u.malformed(errors.New("no structuredContent"), "the result has no structuredContent")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(out.StructuredContent))
	if err != nil {
		return nil, u.malformed(err, "structuredContent is not JSON")
	}
	if err := t.outputCheck.Validate(v); err != nil {
		e := u.malformed(err, "structuredContent does not conform to the tool's outputSchema")
		var te *toolerr.Error
		if errors.As(e, &te) {
			te.Violations = schemaViolations(err)
		}
		return nil, e
	}
	data, err := toStruct(v)
	if err != nil {
		return nil, u.malformed(err, "%s", err.Error())
	}
	env := dynamicpb.NewMessage(t.envelope)
	fields := t.envelope.Fields()
	env.Set(fields.ByName("data"), protoreflect.ValueOfMessage(data.ProtoReflect()))
	h, err := u.mcpHints(out.Meta.AgentHints)
	if err != nil {
		return nil, err
	}
	env.Set(fields.ByName("agent_hints"), protoreflect.ValueOfMessage(h.ProtoReflect()))
	return env.Interface(), nil
}

// MetaAgentHints is the key of a tools/call result's _meta under which an
// MCP upstream returns the AgentHints of its result (docs/ADDING-A-TOOL.md):
// the JSON of toolsvc.v1.AgentHints, checked against its rules like a gRPC
// upstream's hints.
const MetaAgentHints = "toolsvc/agentHints"

// mcpHints reads the hints an MCP upstream returned in the result's _meta,
// or says that it gave none: toolsvc never invents a confidence for it.
// Hints that do not decode or break their rules are a malformed response.
func (u *Upstream) mcpHints(raw json.RawMessage) (*toolsvcv1.AgentHints, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return noHints(u.cfg.Name), nil
	}
	h := &toolsvcv1.AgentHints{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, h); err != nil {
		return nil, u.malformed(err, "the result's %s do not decode", MetaAgentHints)
	}
	if err := u.validator.Validate(h); err != nil {
		return nil, u.malformed(err, "the result's %s break their rules", MetaAgentHints)
	}
	return h, nil
}

// toolFailed is the error of a result with isError: a ToolError the tool
// wrote for agents (its code one of toolsvc's) passes; anything else is
// PROVIDER_ERROR without the upstream's text, which may carry internals.
func (u *Upstream) toolFailed(sc json.RawMessage) error {
	details := map[string]any{"upstream": u.cfg.Name}
	te := &toolsvcv1.ToolError{}
	if len(sc) > 0 && (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(sc, te) == nil &&
		te.GetCode() != "" && te.GetCode() != string(toolerr.Internal) && slices.Contains(toolerr.Codes(), toolerr.Code(te.GetCode())) {
		e := toolerr.New(toolerr.Code(te.GetCode()), "%s", te.GetMessage()).WithDetails(details)
		e.Violations = te.GetFieldViolations()
		return e
	}
	e := toolerr.New(toolerr.ProviderError, "upstream %s's tool reported a failure", u.cfg.Name).WithDetails(details)
	e.Final = true
	return e
}

// mapMCPError turns a failed call into an error a caller can act on, as
// mapError does for gRPC upstreams.
func (u *Upstream) mapMCPError(ctx context.Context, err error) error {
	details := map[string]any{"upstream": u.cfg.Name}
	var re *jsonrpc.Error
	var ae *askError
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errNoAnswer):
		// The user took longer than toolsvc waits for an answer: not a
		// failing upstream.
		e := toolerr.Wrap(err, toolerr.ProviderError, "upstream %s: the server asked the client a question, and no answer came within %s", u.cfg.Name, answerWait).
			WithDetails(details).WithDetails(map[string]any{"reason": "NO_ANSWER"})
		e.Final = true
		return e
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(cause, context.DeadlineExceeded):
		return toolerr.Wrap(err, toolerr.Timeout, "upstream %s did not answer in time", u.cfg.Name).WithDetails(details)
	case errors.Is(err, context.Canceled):
		return toolerr.Wrap(err, toolerr.Timeout, "the call to upstream %s was cancelled", u.cfg.Name).WithDetails(details)
	case errors.As(err, &ae):
		// The tool asked the client a question (elicitation, sampling) it
		// could not be asked: an answer of the client, not a failing
		// upstream, and calling again will not change it.
		details["asked"] = ae.method
		code := toolerr.ProviderError
		var te *toolerr.Error
		if errors.As(ae.err, &te) {
			// The client's own refusal (the capability it lacks, its
			// error) keeps its code and details.
			code = te.Code
			for k, v := range te.Details {
				details[k] = v
			}
		}
		e := toolerr.Wrap(err, code, "upstream %s: %s", u.cfg.Name, ae.Error()).WithDetails(details)
		e.Final = true
		return e
	case errors.Is(err, errUnreachable):
		return toolerr.Wrap(err, toolerr.ProviderError, "upstream %s is unavailable", u.cfg.Name).WithDetails(details)
	case errors.Is(err, errCredentialRefused):
		e := toolerr.Wrap(err, toolerr.ProviderError, "upstream %s refused toolsvc's credential", u.cfg.Name).WithDetails(details)
		e.Final = true
		return e
	case errors.Is(err, errMalformedMessage):
		return u.malformed(err, "the answer is not MCP")
	case errors.As(err, &re) && re.Code == rpcInvalidParams:
		return toolerr.Wrap(err, toolerr.InvalidInput, "upstream %s rejected the arguments", u.cfg.Name).WithDetails(details)
	case errors.As(err, &re) && re.Code == rpcMissingCapability:
		// A 2026 server refuses a call that must ask the client when the
		// request declared no capability to ask, which toolsvc declares
		// only for a call whose client can be asked.
		details["asked"] = "input"
		e := toolerr.Wrap(err, toolerr.ProviderError, "upstream %s: the tool must ask the client a question, and the client that made this call cannot be asked", u.cfg.Name).WithDetails(details)
		e.Final = true
		return e
	case errors.As(err, &re) && re.Code == rpcMethodNotFound:
		e := toolerr.Wrap(err, toolerr.ProviderError, "upstream %s does not serve this tool any more", u.cfg.Name).WithDetails(details)
		e.Final = true
		return e
	default:
		return toolerr.Wrap(err, toolerr.ProviderError, "upstream %s failed", u.cfg.Name).WithDetails(details)
	}
}
