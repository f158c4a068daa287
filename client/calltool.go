package client

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// Result is a tool's answer to [Client.CallTool]: its data as JSON, the
// agent hints and the execution metadata.
type Result struct {
	// Data is the tool's result, as the tool's output schema describes it.
	Data *structpb.Struct
	// Hints are what to do next, how confident the tool is, what it assumed.
	Hints *toolsvcv1.AgentHints
	// Metadata says which tool and version ran, when, for how long, with
	// which trace and correlation ids, and whether the answer was cached or
	// replayed for a repeated idempotency key.
	Metadata *toolsvcv1.ResultMetadata
}

// Decode stores the result's data in v as encoding/json would decode it
// (lowerCamelCase field names).
func (r *Result) Decode(v any) error {
	b, err := protojson.Marshal(r.Data)
	if err != nil {
		return fmt.Errorf("client: result data: %w", err)
	}
	return json.Unmarshal(b, v)
}

// CallTool calls the tool name, its highest version, with args: a
// map[string]any, a *structpb.Struct, a generated request message, or any
// value encoding/json turns into an object with the tool's parameter names.
// It works for every tool the caller may see, upstream tools included, and
// follows the same rules as the typed services: the tool's contract (read
// from the linked descriptors, else asked of the server once and cached)
// decides the idempotency key and the default deadline.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*Result, error) {
	return c.CallToolVersion(ctx, name, "", args)
}

// CallToolVersion is [Client.CallTool] for the version version of the
// tool ("" for the highest).
func (c *Client) CallToolVersion(ctx context.Context, name, version string, args any) (*Result, error) {
	s, err := structOf(args)
	if err != nil {
		return nil, err
	}
	resp, err := c.tools.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: name, Version: version, Arguments: s})
	if err != nil {
		return nil, err
	}
	return &Result{Data: resp.GetData(), Hints: resp.GetAgentHints(), Metadata: resp.GetMetadata()}, nil
}

// structOf turns a tool's arguments into the JSON object CallTool sends.
func structOf(args any) (*structpb.Struct, error) {
	switch a := args.(type) {
	case nil:
		return &structpb.Struct{}, nil
	case *structpb.Struct:
		return a, nil
	case map[string]any:
		s, err := structpb.NewStruct(a)
		if err != nil {
			return nil, &Error{Code: CodeInvalidInput, Kind: "validation", Message: fmt.Sprintf("arguments: %v", err)}
		}
		return s, nil
	case proto.Message:
		b, err := protojson.Marshal(a)
		if err != nil {
			return nil, &Error{Code: CodeInvalidInput, Kind: "validation", Message: fmt.Sprintf("arguments: %v", err)}
		}
		s := &structpb.Struct{}
		if err := protojson.Unmarshal(b, s); err != nil {
			return nil, &Error{Code: CodeInvalidInput, Kind: "validation", Message: fmt.Sprintf("arguments: %v", err)}
		}
		return s, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, &Error{Code: CodeInvalidInput, Kind: "validation", Message: fmt.Sprintf("arguments: %v", err)}
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(b, s); err != nil {
		return nil, &Error{Code: CodeInvalidInput, Kind: "validation", Message: "arguments: not a JSON object"}
	}
	return s, nil
}

// ListTools returns every tool the caller may call, as the server decides
// from the credential (a tool the caller lacks a permission for is left
// out), reading every page. filter may be nil (every tool, the highest
// version of each) or set Category, Tag, AllVersions or NamesOnly; its
// paging fields are the method's own.
func (c *Client) ListTools(ctx context.Context, filter *toolsvcv1.ListToolsRequest) ([]*toolsvcv1.ToolDefinition, error) {
	req := &toolsvcv1.ListToolsRequest{}
	if filter != nil {
		req = proto.CloneOf(filter)
	}
	req.PageToken = ""
	var out []*toolsvcv1.ToolDefinition
	for {
		resp, err := c.tools.ListTools(ctx, req)
		if err != nil {
			return nil, err
		}
		out = append(out, resp.GetTools()...)
		if resp.GetNextPageToken() == "" {
			return out, nil
		}
		req.PageToken = resp.GetNextPageToken()
	}
}
