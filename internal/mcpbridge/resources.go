package mcpbridge

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

// KnowledgeScheme is the URI scheme of knowledge items as MCP resources.
const KnowledgeScheme = "knowledge://"

const knowledgeMIME = "text/markdown"

// maxResources is how many knowledge items resources/list returns (the
// query-knowledge limit).
const maxResources = 100

var resourceTemplates = []byte(`{"resourceTemplates":[{"uriTemplate":"knowledge://{id}","name":"knowledge-item",` +
	`"title":"Knowledge item","description":"An organizational knowledge item (ADR, policy, pattern or spec) in full, as Markdown, by id.",` +
	`"mimeType":"text/markdown"},` +
	`{"uriTemplate":"toolsvc://tools/{name}/output-schema","name":"tool-output-schema","title":"Tool output schema",` +
	`"description":"The whole outputSchema of a tool (its result, with the agentHints and metadata envelope, or its ToolError), which tools/list abridges.",` +
	`"mimeType":"application/schema+json"}]}`)

// chainCall runs a tool method on the channel for a protocol method of the
// bridge (resources, completion), with the caller's metadata.
func (b *Bridge) chainCall(ctx context.Context, x *exchange, method string, in, out proto.Message) error {
	ctx = interceptors.WithTransport(ctx, interceptors.TransportMCP)
	ctx = metadata.NewOutgoingContext(ctx, x.outgoing())
	return b.cfg.Channel.Invoke(ctx, method, in, out)
}

// toolError returns the ToolError of a chain error.
func toolError(err error) *toolsvcv1.ToolError {
	st, _ := status.FromError(err)
	return toolerr.FromStatus(st)
}

// protocolError reports a chain error on a protocol method (not a tool
// call) as a JSON-RPC error carrying the ToolError.
func protocolError(err error) error {
	te := toolError(err)
	data, _ := resultJSON.Marshal(te)
	re := &rpcError{Message: te.GetMessage(), Data: json.RawMessage(data)}
	switch toolerr.Code(te.GetCode()) {
	case toolerr.NotFound:
		re.Code = CodeResourceNotFound
	case toolerr.InvalidInput:
		re.Code = CodeInvalidParams
	case toolerr.Unauthorized:
		re.Code = CodeUnauthorized
	default:
		re.Code = CodeInternalError
	}
	return re
}

// listResources answers resources/list with the accepted knowledge items,
// found through query-knowledge on the chain, so the caller sees exactly
// what its permissions let it query. A caller that may not query knowledge
// has no resources.
func (b *Bridge) listResources(ctx context.Context, x *exchange, raw json.RawMessage) ([]byte, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if p.Cursor != "" {
		return nil, errInvalidParams("invalid params: resources/list has a single page; cursor is not one it returned")
	}
	out := &knowledgev1.QueryKnowledgeResponse{}
	limit := uint32(maxResources)
	err := b.chainCall(ctx, x, knowledgev1.KnowledgeService_QueryKnowledge_FullMethodName,
		&knowledgev1.QueryKnowledgeRequest{Status: []string{"accepted"}, Limit: &limit}, out)
	if err != nil {
		if code := toolerr.Code(toolError(err).GetCode()); code == toolerr.NotFound || code == toolerr.Forbidden {
			return []byte(`{"resources":[]}`), nil
		}
		return nil, protocolError(err)
	}
	type resource struct {
		URI         string `json:"uri"`
		Name        string `json:"name"`
		Title       string `json:"title,omitempty"`
		Description string `json:"description,omitempty"`
		MIMEType    string `json:"mimeType"`
	}
	list := make([]resource, 0, len(out.GetData().GetItems()))
	for _, it := range out.GetData().GetItems() {
		list = append(list, resource{URI: KnowledgeScheme + it.GetId(), Name: it.GetId(), Title: it.GetTitle(),
			Description: it.GetSummary(), MIMEType: knowledgeMIME})
	}
	return json.Marshal(map[string]any{"resources": list})
}

// readResource answers resources/read of knowledge://{id} with the item's
// Markdown (and its structured form), read through show-knowledge on the
// chain: a caller without permission gets the chain's error.
func (b *Bridge) readResource(ctx context.Context, x *exchange, raw json.RawMessage) ([]byte, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if strings.HasPrefix(p.URI, outputSchemaScheme) {
		return b.readOutputSchema(ctx, x, p.URI)
	}
	id, ok := strings.CutPrefix(p.URI, KnowledgeScheme)
	if !ok || id == "" {
		return nil, &rpcError{Code: CodeResourceNotFound, Message: "resource not found: only knowledge://{id} and toolsvc://tools/{name}/output-schema resources exist",
			Data: map[string]any{"uri": p.URI}}
	}
	out := &knowledgev1.ShowKnowledgeResponse{}
	include := true
	if err := b.chainCall(ctx, x, knowledgev1.KnowledgeService_ShowKnowledge_FullMethodName,
		&knowledgev1.ShowKnowledgeRequest{Id: id, IncludeConstraints: &include}, out); err != nil {
		return nil, protocolError(err)
	}
	item, err := resultJSON.Marshal(out.GetData().GetItem())
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"contents": []any{
		map[string]any{"uri": p.URI, "mimeType": knowledgeMIME, "text": out.GetData().GetItem().GetContent()},
		map[string]any{"uri": p.URI, "mimeType": "application/json", "text": string(item)},
	}})
}

// complete answers completion/complete: knowledge item ids for the id of
// the knowledge://{id} template (accepted items the caller may query);
// nothing for anything else.
func (b *Bridge) complete(ctx context.Context, x *exchange, raw json.RawMessage) ([]byte, error) {
	var p struct {
		Ref struct {
			Type string `json:"type"`
			URI  string `json:"uri"`
		} `json:"ref"`
		Argument struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"argument"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	values := []string{}
	if p.Ref.Type == "ref/resource" && p.Ref.URI == "knowledge://{id}" && p.Argument.Name == "id" {
		out := &knowledgev1.QueryKnowledgeResponse{}
		limit := uint32(maxResources)
		// A caller that may not query knowledge simply gets no suggestions.
		if err := b.chainCall(ctx, x, knowledgev1.KnowledgeService_QueryKnowledge_FullMethodName,
			&knowledgev1.QueryKnowledgeRequest{Status: []string{"accepted"}, Limit: &limit}, out); err != nil {
			out.Reset()
		}
		for _, it := range out.GetData().GetItems() {
			if strings.HasPrefix(it.GetId(), p.Argument.Value) {
				values = append(values, it.GetId())
			}
		}
		slices.Sort(values)
	}
	return json.Marshal(map[string]any{"completion": map[string]any{"values": values, "total": len(values), "hasMore": false}})
}
