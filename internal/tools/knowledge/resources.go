package knowledge

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	"github.com/toolsvc/toolsvc/internal/contract/resource"
)

// Scheme is the URI scheme of knowledge items as resources.
const Scheme = "knowledge://"

const markdown = "text/markdown"

// maxResources is how many knowledge items a listing returns (the
// query-knowledge limit).
const maxResources = 100

// itemJSON renders an item as MCP renders a result's data: proto JSON
// names, defaults included (docs/MCP.md).
var itemJSON = protojson.MarshalOptions{EmitDefaultValues: true}

// Resources serves accepted knowledge items as resources at
// knowledge://{id}: the listing through query-knowledge, an item through
// show-knowledge, both on the chain, so a caller sees exactly the items
// its permissions let it query or show.
type Resources struct{}

// Scheme implements resource.Provider.
func (Resources) Scheme() string { return Scheme }

// Template implements resource.Provider.
func (Resources) Template() resource.Template {
	return resource.Template{URITemplate: Scheme + "{id}", Name: "knowledge-item", Title: "Knowledge item",
		Description: "An organizational knowledge item (ADR, policy, pattern or spec) in full, as Markdown, by id.",
		MIMEType:    markdown}
}

// Instructions implements resource.Provider.
func (Resources) Instructions() string {
	return "Accepted knowledge items are resources at " + Scheme + "{id}."
}

// accepted returns the accepted items the caller may query.
func accepted(ctx context.Context, call resource.Call) ([]*knowledgev1.KnowledgeSummary, error) {
	out := &knowledgev1.QueryKnowledgeResponse{}
	limit := uint32(maxResources)
	err := call(ctx, knowledgev1.KnowledgeService_QueryKnowledge_FullMethodName,
		&knowledgev1.QueryKnowledgeRequest{Status: []string{"accepted"}, Limit: &limit}, out)
	return out.GetData().GetItems(), err
}

// List implements resource.Provider: the accepted items.
func (Resources) List(ctx context.Context, call resource.Call) ([]resource.Resource, error) {
	items, err := accepted(ctx, call)
	if err != nil {
		return nil, err
	}
	list := make([]resource.Resource, 0, len(items))
	for _, it := range items {
		list = append(list, resource.Resource{URI: Scheme + it.GetId(), Name: it.GetId(), Title: it.GetTitle(),
			Description: it.GetSummary(), MIMEType: markdown})
	}
	return list, nil
}

// Read implements resource.Provider: the item's Markdown and its
// structured form (with its constraints).
func (Resources) Read(ctx context.Context, call resource.Call, uri string) ([]resource.Content, error) {
	out := &knowledgev1.ShowKnowledgeResponse{}
	include := true
	if err := call(ctx, knowledgev1.KnowledgeService_ShowKnowledge_FullMethodName,
		&knowledgev1.ShowKnowledgeRequest{Id: strings.TrimPrefix(uri, Scheme), IncludeConstraints: &include}, out); err != nil {
		return nil, err
	}
	item, err := itemJSON.Marshal(out.GetData().GetItem())
	if err != nil {
		return nil, err
	}
	return []resource.Content{
		{URI: uri, MIMEType: markdown, Text: out.GetData().GetItem().GetContent()},
		{URI: uri, MIMEType: "application/json", Text: string(item)},
	}, nil
}

// Complete implements resource.Provider: the ids of accepted items the
// caller may query, for the template's id.
func (Resources) Complete(ctx context.Context, call resource.Call, argument, prefix string) []string {
	values := []string{}
	if argument != "id" {
		return values
	}
	// A caller that may not query knowledge simply gets no suggestions.
	items, err := accepted(ctx, call)
	if err != nil {
		return values
	}
	for _, it := range items {
		if strings.HasPrefix(it.GetId(), prefix) {
			values = append(values, it.GetId())
		}
	}
	slices.Sort(values)
	return values
}
