package toolresult_test

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/toolresult"
)

func typedResponse() *memoryv1.AddMemoryResponse {
	return &memoryv1.AddMemoryResponse{
		Data:       &memoryv1.AddMemoryData{Success: true, MemoryId: "mem_1", Message: "stored", Layer: "user"},
		AgentHints: &toolsvcv1.AgentHints{Confidence: 0.9, Reasoning: "stored as asked"},
		Metadata:   &toolsvcv1.ResultMetadata{Tool: "add-memory", ToolVersion: "1.0.0", TraceId: "t1"},
	}
}

func TestGenericRendersDataAsAgentsReadIt(t *testing.T) {
	g, err := toolresult.Generic(typedResponse())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := structpb.NewStruct(map[string]any{"success": true, "memoryId": "mem_1", "message": "stored", "layer": "user"})
	if !proto.Equal(g.GetData(), want) {
		t.Errorf("data = %v, want lowerCamelCase %v", g.GetData(), want)
	}
	if g.GetAgentHints().GetConfidence() != 0.9 || g.GetMetadata().GetTool() != "add-memory" {
		t.Errorf("hints or metadata lost: %v %v", g.GetAgentHints(), g.GetMetadata())
	}
}

// Zero values and empty lists are present: the tool contract's arrays may be empty
// but are never omitted, and a false success is an answer.
func TestGenericKeepsZeroValues(t *testing.T) {
	st, err := toolresult.DataStruct(&memoryv1.SearchMemoriesData{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"success", "results", "totalCount", "searchedLayers"} {
		if _, ok := st.GetFields()[k]; !ok {
			t.Errorf("zero-valued %q is omitted: %v", k, st)
		}
	}
	if st.GetFields()["results"].GetListValue() == nil {
		t.Errorf("results is %v, want an empty list", st.GetFields()["results"])
	}
}

func TestTypedIsGenericReversed(t *testing.T) {
	in := typedResponse()
	g, err := toolresult.Generic(in)
	if err != nil {
		t.Fatal(err)
	}
	out := &memoryv1.AddMemoryResponse{}
	if err := toolresult.Typed(g, out); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, out) {
		t.Errorf("Typed(Generic(x)) = %v, want %v", out, in)
	}
}

func TestTypedIgnoresFieldsANewerVersionAdded(t *testing.T) {
	g, err := toolresult.Generic(typedResponse())
	if err != nil {
		t.Fatal(err)
	}
	g.Data.Fields["addedLater"] = structpb.NewStringValue("x")
	out := &memoryv1.AddMemoryResponse{}
	if err := toolresult.Typed(g, out); err != nil {
		t.Fatalf("a stored result with an unknown field is refused: %v", err)
	}
	if out.GetData().GetMemoryId() != "mem_1" {
		t.Errorf("data = %v", out.GetData())
	}
}

func TestTypedRefusesDataOfAnotherShape(t *testing.T) {
	g := &toolsvcv1.CallToolResponse{Data: &structpb.Struct{Fields: map[string]*structpb.Value{
		"success": structpb.NewStringValue("not a bool"),
	}}}
	err := toolresult.Typed(g, &memoryv1.AddMemoryResponse{})
	var te *toolerr.Error
	if !errors.As(err, &te) || te.Code != toolerr.Internal {
		t.Fatalf("err = %v, want an INTERNAL tool error", err)
	}
	if te.Message != "internal error: stored result does not fit the tool's output" {
		t.Errorf("message = %q", te.Message)
	}
}

func TestGenericWithoutEnvelopeFields(t *testing.T) {
	// A message without data, hints or metadata fields gives an empty result, not an error.
	g, err := toolresult.Generic(&toolsvcv1.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if g.GetData() != nil || g.GetAgentHints() != nil || g.GetMetadata() != nil {
		t.Errorf("Generic of a message without the envelope = %v", g)
	}
}
