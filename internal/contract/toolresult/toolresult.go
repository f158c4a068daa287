// Package toolresult converts between a tool's typed response and the
// generic ToolResult of ToolService.CallTool (data as JSON, hints and
// metadata as they are), for ToolService and for the chain steps that keep
// responses (idempotent replays), and renders the ToolContext of a call
// from its facts (ToolContext).
package toolresult

import (
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// resultJSON renders results as agents read them: lowerCamelCase names,
// empty lists and zero values present (docs/CONTRACTS.md: arrays "can be empty" but
// are never omitted).
var resultJSON = protojson.MarshalOptions{EmitDefaultValues: true}

// Generic turns a typed tool response into a CallToolResponse: data as JSON,
// hints and metadata as they are.
func Generic(resp proto.Message) (*toolsvcv1.CallToolResponse, error) {
	pr := resp.ProtoReflect()
	fields := pr.Descriptor().Fields()
	out := &toolsvcv1.CallToolResponse{}
	if fd := fields.ByName("data"); fd != nil && pr.Has(fd) {
		data, err := DataStruct(pr.Get(fd).Message().Interface())
		if err != nil {
			return nil, err
		}
		out.Data = data
	}
	if fd := fields.ByName("agent_hints"); fd != nil && pr.Has(fd) {
		out.AgentHints, _ = pr.Get(fd).Message().Interface().(*toolsvcv1.AgentHints)
	}
	if fd := fields.ByName("metadata"); fd != nil && pr.Has(fd) {
		out.Metadata, _ = pr.Get(fd).Message().Interface().(*toolsvcv1.ResultMetadata)
	}
	return out, nil
}

// DataStruct renders a data message as a Struct in its protojson form.
func DataStruct(m proto.Message) (*structpb.Struct, error) {
	b, err := resultJSON.Marshal(m)
	if err != nil {
		return nil, toolerr.Wrap(err, toolerr.Internal, "internal error: result is not serializable")
	}
	// encoding/json + structpb builds the same Struct as protojson.Unmarshal
	// (JSON numbers are doubles either way) at about a third of the cost.
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, toolerr.Wrap(err, toolerr.Internal, "internal error: result is not a JSON object")
	}
	st, err := structpb.NewStruct(obj)
	if err != nil {
		return nil, toolerr.Wrap(err, toolerr.Internal, "internal error: result is not a JSON object")
	}
	return st, nil
}

// Typed fills out, a typed tool response, from g: the reverse of Generic.
func Typed(g *toolsvcv1.CallToolResponse, out proto.Message) error {
	pr := out.ProtoReflect()
	fields := pr.Descriptor().Fields()
	if fd := fields.ByName("data"); fd != nil && g.GetData() != nil {
		b, err := json.Marshal(g.GetData().AsMap())
		if err != nil {
			return toolerr.Wrap(err, toolerr.Internal, "internal error: stored result is not JSON")
		}
		data := pr.NewField(fd)
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, data.Message().Interface()); err != nil {
			return toolerr.Wrap(err, toolerr.Internal, "internal error: stored result does not fit the tool's output")
		}
		pr.Set(fd, data)
	}
	if fd := fields.ByName("agent_hints"); fd != nil && g.GetAgentHints() != nil {
		pr.Set(fd, protoreflect.ValueOfMessage(g.GetAgentHints().ProtoReflect()))
	}
	if fd := fields.ByName("metadata"); fd != nil && g.GetMetadata() != nil {
		pr.Set(fd, protoreflect.ValueOfMessage(g.GetMetadata().ProtoReflect()))
	}
	return nil
}
