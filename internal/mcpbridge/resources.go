package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/prompt"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/resource"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// outputSchemaTemplate is the template of the bridge's own resources,
// the whole outputSchema of a tool, listed after the providers' templates.
var outputSchemaTemplate = resource.Template{URITemplate: "toolsvc://tools/{name}/output-schema", Name: "tool-output-schema",
	Title:       "Tool output schema",
	Description: "The whole outputSchema of a tool (its result, with the agentHints and metadata envelope, or its ToolError), which tools/list abridges.",
	MIMEType:    "application/schema+json"}

// resourceIndex holds the resource providers of a registry's services
// (registry.Service.Resources): the bridge serves resources by URI scheme
// and knows nothing of the tools behind them.
type resourceIndex struct {
	providers []resource.Provider
	// templates is the rendered resources/templates/list result.
	templates []byte
	// instructions are the server's instructions: the bridge's, then each
	// provider's sentence.
	instructions string
	// listers are the providers whose templates are read at run time
	// (resource.TemplateLister), listed after templates.
	listers []resource.TemplateLister
	// prompts are the prompt providers of the registry's services
	// (registry.Service.Prompts), served by name prefix (prompts.go).
	prompts []prompt.Provider
}

func newResourceIndex(reg *registry.Registry) (resourceIndex, error) {
	ri := resourceIndex{instructions: instructions}
	templates := []resource.Template{}
	for _, s := range reg.Services() {
		p := s.Resources
		if p == nil {
			continue
		}
		for _, q := range ri.providers {
			if q.Scheme() == p.Scheme() {
				return ri, fmt.Errorf("mcpbridge: two resource providers of scheme %q", p.Scheme())
			}
		}
		ri.providers = append(ri.providers, p)
		templates = append(templates, p.Template())
		if l, ok := p.(resource.TemplateLister); ok {
			ri.listers = append(ri.listers, l)
		}
		if s := p.Instructions(); s != "" {
			ri.instructions += " " + s
		}
	}
	b, err := json.Marshal(map[string]any{"resourceTemplates": append(templates, outputSchemaTemplate)})
	ri.templates = b
	if err != nil {
		return ri, err
	}
	ri.prompts, err = promptProviders(reg)
	return ri, err
}

// listTemplates answers resources/templates/list: every provider's
// template and the bridge's, then the templates of the providers that read
// theirs at run time (an upstream's), through the chain as the caller; a
// provider the chain refuses the caller (NOT_FOUND, FORBIDDEN) adds none.
func (b *Bridge) listTemplates(ctx context.Context, x *exchange) ([]byte, error) {
	ri := b.catalog.Load().tools.resources
	if len(ri.listers) == 0 {
		return ri.templates, nil
	}
	var out struct {
		Templates []json.RawMessage `json:"resourceTemplates"`
	}
	if err := json.Unmarshal(ri.templates, &out); err != nil {
		return nil, err
	}
	for _, l := range ri.listers {
		got, err := l.Templates(ctx, b.caller(x))
		if err != nil {
			if refusedCaller(err) {
				continue
			}
			return nil, protocolError(err)
		}
		for _, t := range got {
			raw, err := json.Marshal(t)
			if err != nil {
				return nil, err
			}
			out.Templates = append(out.Templates, raw)
		}
	}
	return json.Marshal(map[string]any{"resourceTemplates": out.Templates})
}

// refusedCaller reports whether a chain error refuses the caller a
// provider (NOT_FOUND, FORBIDDEN): a listing then leaves it out.
func refusedCaller(err error) bool {
	code := toolerr.Code(toolError(err).GetCode())
	return code == toolerr.NotFound || code == toolerr.Forbidden
}

// provider returns the provider of uri and the rest of uri after its
// scheme.
func (ri resourceIndex) provider(uri string) (resource.Provider, string, bool) {
	for _, p := range ri.providers {
		if rest, ok := strings.CutPrefix(uri, p.Scheme()); ok {
			return p, rest, true
		}
	}
	return nil, "", false
}

// notFound says which resources exist.
func (ri resourceIndex) notFound(uri string) error {
	var names []string
	for _, p := range ri.providers {
		names = append(names, p.Template().URITemplate)
	}
	names = append(names, outputSchemaTemplate.URITemplate)
	return &framing.Error{Code: CodeResourceNotFound, Message: "resource not found: only " + strings.Join(names, " and ") + " resources exist",
		Data: map[string]any{"uri": uri}}
}

// chainCall runs a tool method on the channel for a protocol method of the
// bridge (resources, completion), with the caller's metadata.
func (b *Bridge) chainCall(ctx context.Context, x *exchange, method string, in, out proto.Message) error {
	return b.cfg.Channel.Invoke(x.toChain(ctx, x.outgoing()), method, in, out)
}

// toolError returns the ToolError of a chain error (or of a provider's
// own *toolerr.Error).
func toolError(err error) *toolsvcv1.ToolError {
	st, ok := status.FromError(err)
	if te, isTE := toolerr.As(err); !ok && isTE {
		return te.ToolError("")
	}
	return toolerr.FromStatus(st)
}

// caller returns the resource.Call of a request: tool methods on the
// chain with the caller's metadata.
func (b *Bridge) caller(x *exchange) resource.Call {
	return func(ctx context.Context, method string, in, out proto.Message) error {
		return b.chainCall(ctx, x, method, in, out)
	}
}

// protocolError reports a chain error on a protocol method (not a tool
// call) as a JSON-RPC error carrying the ToolError.
func protocolError(err error) error {
	te := toolError(err)
	data, _ := resultJSON.Marshal(te)
	re := &framing.Error{Message: te.GetMessage(), Data: json.RawMessage(data)}
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

// listResources answers resources/list with every provider's resources
// the caller may see: providers read through the chain, so the caller sees
// exactly what its permissions let it call, and a provider whose reads the
// chain refuses the caller (NOT_FOUND, FORBIDDEN) lists nothing.
func (b *Bridge) listResources(ctx context.Context, x *exchange, raw json.RawMessage) ([]byte, error) {
	return listProvided(ctx, b.caller(x), raw, "resources", b.catalog.Load().tools.resources.providers)
}

// lister is a provider of resources or prompts.
type lister[T any] interface {
	List(ctx context.Context, call resource.Call) ([]T, error)
}

// listProvided answers a single-page list method (resources/list,
// prompts/list) with what each provider lists for the caller under key;
// a provider whose listing the chain refuses the caller lists nothing.
func listProvided[T any, P lister[T]](ctx context.Context, call resource.Call, raw json.RawMessage, key string, providers []P) ([]byte, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if p.Cursor != "" {
		return nil, framing.InvalidParams("invalid params: " + key + "/list has a single page; cursor is not one it returned")
	}
	list := []T{}
	for _, pr := range providers {
		got, err := pr.List(ctx, call)
		if err != nil {
			if refusedCaller(err) {
				continue
			}
			return nil, protocolError(err)
		}
		list = append(list, got...)
	}
	return json.Marshal(map[string]any{key: list})
}

// readResource answers resources/read: a tool's whole outputSchema, or
// what the provider of the URI's scheme reads through the chain (a caller
// without permission gets the chain's error).
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
	ri := b.catalog.Load().tools.resources
	pr, rest, ok := ri.provider(p.URI)
	if !ok || rest == "" {
		return nil, ri.notFound(p.URI)
	}
	contents, err := pr.Read(ctx, b.caller(x), p.URI)
	if err != nil {
		return nil, protocolError(err)
	}
	return json.Marshal(map[string]any{"contents": contents})
}

// complete answers completion/complete: the values the provider of a
// resource template suggests for its argument (those the caller may see);
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
	if p.Ref.Type == "ref/resource" {
		for _, pr := range b.catalog.Load().tools.resources.providers {
			if pr.Template().URITemplate == p.Ref.URI {
				values = pr.Complete(ctx, b.caller(x), p.Argument.Name, p.Argument.Value)
				break
			}
		}
	}
	return json.Marshal(map[string]any{"completion": map[string]any{"values": values, "total": len(values), "hasMore": false}})
}
