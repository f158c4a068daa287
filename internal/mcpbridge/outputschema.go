package mcpbridge

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/schema"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// Every tool result carries the same envelope (agentHints, metadata, or a
// ToolError with its own hints): about 16 KB of JSON Schema that, written
// out in each tool's outputSchema, made tools/list cost 20 KB per tool.
// tools/list therefore advertises an abridged outputSchema by default
// (listedOutputSchema), and the whole one stays published:
//
//   - MCP: resources/read of toolsvc://tools/{name}/output-schema
//     (outputSchemaURI), which every abridged outputSchema names, and
//     tools/list itself with ListFullSchemas;
//   - gRPC ToolService.GetTool and REST GET /v1/tools/{name} (the result's
//     schema), /openapi.json (the ToolError).
//
// The abridged schema is a relaxation of the whole one: every keyword it
// keeps is one of the whole schema's, at the same place, so every result
// the whole schema accepts it accepts too, and a client validating
// structuredContent against it passes whatever toolsvc answers. toolsvc
// itself still checks each result against the whole contract (the chain's
// result validation), so nothing is weakened on the server.
//
// It is not a $ref to a published schema: the TypeScript SDK (v1 and v2,
// ajv) compiles every outputSchema when it lists tools and refuses a $ref
// it cannot resolve ("can't resolve reference"), and jsonschema-go (the Go
// SDK's) and santhosh-tekuri/jsonschema (mark3labs') resolve no remote
// reference without a loader (docs/MCP.md, "What tools/list costs").

// outputSchemaScheme and outputSchemaSuffix make the URI of a tool's whole
// outputSchema as an MCP resource: toolsvc://tools/{name}/output-schema.
const (
	outputSchemaScheme = "toolsvc://tools/"
	outputSchemaSuffix = "/output-schema"
	schemaMIME         = "application/schema+json"
)

// outputSchemaURI is the resource holding tool name's whole outputSchema.
func outputSchemaURI(name string) string { return outputSchemaScheme + name + outputSchemaSuffix }

// outputSchema is a tool's whole outputSchema: its derived result schema,
// or the ToolError of an isError result. MCP clients (the TypeScript SDK
// among them) validate structuredContent against outputSchema even when
// isError is set, and toolsvc's error results carry the ToolError there
// so that a model can fix its call.
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

// listedOutputSchema is the outputSchema tools/list advertises by default
// for tool name: one object whose data is the result's data schema with
// every validating keyword (documentation keys and the bounds a protobuf
// integer type implies left out), and whose other properties (agentHints,
// metadata, the ToolError's fields) are each reduced to their type and
// required keys. Without $schema: JSON Schema 2020-12 is MCP's default
// dialect.
func listedOutputSchema(name string, result, toolError schema.Schema) map[string]any {
	rp, _ := result["properties"].(map[string]any)
	ep, _ := toolError["properties"].(map[string]any)
	props := make(map[string]any, len(rp))
	for k, v := range rp {
		sub, _ := v.(map[string]any)
		if k == "data" {
			props[k] = validating(sub)
			continue
		}
		sh := shape(sub)
		if e, ok := ep[k].(map[string]any); ok {
			sh = looser(sh, shape(e))
		}
		props[k] = sh
	}
	out := map[string]any{
		"type": "object",
		"description": "Abridged: {data, agentHints, metadata}, or a ToolError when isError is true. " +
			"In full: resource " + outputSchemaURI(name) + ".",
		"properties": props,
	}
	if req := common(required(result), required(toolError)); len(req) > 0 {
		out["required"] = req
	}
	return out
}

// listedInputSchema is the inputSchema tools/list advertises by default:
// the derived one without $schema (2020-12, MCP's default dialect) and
// without its top-level description, the request message's comment, which
// the tool's description says better. Every property and rule stays.
func listedInputSchema(s map[string]any) map[string]any {
	out := maps.Clone(s)
	delete(out, "$schema")
	delete(out, "description")
	return out
}

// shape is s reduced to its type and required keys.
func shape(s map[string]any) map[string]any {
	out := map[string]any{}
	if t, ok := s["type"]; ok {
		out["type"] = t
	}
	if r := required(s); len(r) > 0 {
		out["required"] = r
	}
	return out
}

// looser is the shape both shapes a and b allow: the type they agree on,
// the keys both require.
func looser(a, b map[string]any) map[string]any {
	out := map[string]any{}
	if t, ok := a["type"]; ok && t == b["type"] {
		out["type"] = t
	}
	if r := common(required(a), required(b)); len(r) > 0 {
		out["required"] = r
	}
	return out
}

func required(s map[string]any) []any {
	switch r := s["required"].(type) {
	case []any:
		return r
	case []string:
		out := make([]any, len(r))
		for i, k := range r {
			out[i] = k
		}
		return out
	}
	return nil
}

// common is the keys of a that b holds too.
func common(a, b []any) []any {
	var out []any
	for _, k := range a {
		if slices.Contains(b, k) {
			out = append(out, k)
		}
	}
	return out
}

// validating is the schema s without its documentation keys (stripSchema)
// and without the minimum and maximum that only restate a protobuf
// integer's range (int32, uint32), at every depth.
func validating(s map[string]any) map[string]any {
	return dropTypeRanges(stripSchema(s))
}

func dropTypeRanges(s map[string]any) map[string]any {
	lo, okLo := schema.Number(s["minimum"])
	hi, okHi := schema.Number(s["maximum"])
	if okLo && okHi && ((lo == 0 && hi == math.MaxUint32) || (lo == math.MinInt32 && hi == math.MaxInt32)) {
		delete(s, "minimum")
		delete(s, "maximum")
	}
	for k, v := range s {
		switch k {
		case "enum", "const", "required":
			continue
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
			if m, ok := v.(map[string]any); ok {
				for _, sub := range m {
					if sm, ok := sub.(map[string]any); ok {
						dropTypeRanges(sm)
					}
				}
				continue
			}
		}
		switch x := v.(type) {
		case map[string]any:
			dropTypeRanges(x)
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					dropTypeRanges(em)
				}
			}
		}
	}
	return s
}

// readOutputSchema answers resources/read of
// toolsvc://tools/{name}/output-schema with the tool's whole outputSchema
// (the one tools/list abridges). Whether the caller may see the tool is
// ToolService.GetTool's answer on the chain (audited like every transport's);
// a tool it may not see reads as not found, like one that does not exist.
func (b *Bridge) readOutputSchema(ctx context.Context, x *exchange, uri string) ([]byte, error) {
	name, _ := strings.CutPrefix(uri, outputSchemaScheme)
	name, _ = strings.CutSuffix(name, outputSchemaSuffix)
	notFound := &framing.Error{Code: CodeResourceNotFound, Message: "resource not found: no tool " + name + " to describe",
		Data: map[string]any{"uri": uri}}
	if name == "" || strings.Contains(name, "/") {
		return nil, notFound
	}
	out := &toolsvcv1.GetToolResponse{}
	if err := b.chainCall(ctx, x, toolsvcv1.ToolService_GetTool_FullMethodName, &toolsvcv1.GetToolRequest{Name: name}, out); err != nil {
		return nil, protocolError(err)
	}
	idx := b.catalog.Load().tools
	t := idx.byName[name]
	if t == nil {
		return nil, notFound
	}
	text, err := json.Marshal(outputSchema(t.OutputSchema, idx.errSchema))
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"contents": []any{
		map[string]any{"uri": uri, "mimeType": schemaMIME, "text": string(text)},
	}})
}
