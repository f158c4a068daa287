package interceptors_test

import (
	"context"
	"errors"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

func runValidate(t *testing.T, c *interceptors.Call, req any) (*fakeNext, error) {
	t.Helper()
	v, err := protovalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	next := &fakeNext{}
	_, err = runStep(context.Background(), interceptors.ValidateStep(v, 0), c, req, next)
	if err != nil && next.count() != 0 {
		t.Errorf("refused (%v) but the handler ran", err)
	}
	return next, err
}

func TestValidatePassesAValidRequest(t *testing.T) {
	req := &memoryv1.SearchMemoriesRequest{Query: "coffee", Layers: []string{"user"}}
	next, err := runValidate(t, &interceptors.Call{Tool: memTool(t, searchMethod, nil), Request: req}, req)
	if err != nil || next.count() != 1 {
		t.Fatalf("err %v, handler ran %d times", err, next.count())
	}
}

func TestValidateNamesTheFieldAndRule(t *testing.T) {
	for name, tc := range map[string]struct {
		req         *memoryv1.SearchMemoriesRequest
		field, rule string
	}{
		"empty query":   {&memoryv1.SearchMemoriesRequest{}, "query", "string.min_len"},
		"unknown layer": {&memoryv1.SearchMemoriesRequest{Query: "q", Layers: []string{"user", "galaxy"}}, "layers[1]", "string.in"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := runValidate(t, &interceptors.Call{Tool: memTool(t, searchMethod, nil), Request: tc.req}, tc.req)
			e := wantCode(t, err, toolerr.InvalidInput)
			if len(e.Violations) != 1 {
				t.Fatalf("violations %v, want one", e.Violations)
			}
			if v := e.Violations[0]; v.GetField() != tc.field || v.GetRule() != tc.rule {
				t.Errorf("violation %s/%s, want %s/%s", v.GetField(), v.GetRule(), tc.field, tc.rule)
			}
		})
	}
}

func TestValidateGenericCallChecksTheDecodedRequest(t *testing.T) {
	// CallTool's own request is valid; the decoded tool request is not.
	outer := &toolsvcv1.CallToolRequest{Name: "search-memories"}
	typed := &memoryv1.SearchMemoriesRequest{}
	_, err := runValidate(t, &interceptors.Call{Tool: memTool(t, searchMethod, nil), Request: typed, Generic: true}, outer)
	e := wantCode(t, err, toolerr.InvalidInput)
	if e.Violations[0].GetField() != "query" {
		t.Errorf("field %q, want query", e.Violations[0].GetField())
	}
}

func TestValidateRunsTheToolsSchemaCheck(t *testing.T) {
	refusal := toolerr.New(toolerr.InvalidInput, "schema: query must match ^[a-z]+$")
	var checked proto.Message
	tool := memTool(t, searchMethod, func(tl *registry.Tool) {
		tl.CheckInput = func(m proto.Message) error { checked = m; return refusal }
	})
	req := &memoryv1.SearchMemoriesRequest{Query: "Q1"}
	_, err := runValidate(t, &interceptors.Call{Tool: tool, Request: req}, req)
	if !errors.Is(err, refusal) {
		t.Fatalf("err %v, want the schema check's refusal", err)
	}
	if checked != req {
		t.Errorf("schema check saw %v, want the call's request", checked)
	}

	// protovalidate first: an invalid request never reaches the schema check.
	checked = nil
	bad := &memoryv1.SearchMemoriesRequest{}
	_, err = runValidate(t, &interceptors.Call{Tool: tool, Request: bad}, bad)
	wantCode(t, err, toolerr.InvalidInput)
	if checked != nil {
		t.Error("the schema check ran on a request protovalidate refused")
	}
}

func TestValidateChecksRequestsOfNonTools(t *testing.T) {
	// ToolService's own requests are validated too.
	req := &toolsvcv1.GetToolRequest{}
	if protovalidate.Validate(req) == nil {
		t.Fatal("fixture: GetToolRequest{} should be invalid (name is required)")
	}
	_, err := runValidate(t, &interceptors.Call{}, req)
	wantCode(t, err, toolerr.InvalidInput)
}

func TestValidateFieldPathsAreJSONNames(t *testing.T) {
	req := &memoryv1.AddMemoryRequest{SourceType: "rumour"}
	_, err := runValidate(t, &interceptors.Call{Tool: memTool(t, addMethod, nil), Request: req}, req)
	e := wantCode(t, err, toolerr.InvalidInput)
	for _, v := range e.Violations {
		if v.GetField() == "sourceType" && v.GetRule() == "string.in" {
			return
		}
	}
	t.Errorf("violations %v, want sourceType/string.in (the JSON name, not source_type)", e.Violations)
}

// TestMissingRequiredStringSaysRequired: an empty string that must have at
// least one character is "is required", not "must be at least 1
// characters"; a longer minimum keeps protovalidate's words.
func TestMissingRequiredStringSaysRequired(t *testing.T) {
	vs := &validate.Violations{Violations: []*validate.Violation{
		{RuleId: proto.String("string.min_len"), Message: proto.String("value length must be at least 1 characters")},
		{RuleId: proto.String("repeated.min_items"), Message: proto.String("value must contain at least 1 item(s)")},
		{RuleId: proto.String("string.min_len"), Message: proto.String("value length must be at least 3 characters")},
	}}
	e := interceptors.InvalidInput((&toolsvcv1.GetToolRequest{}).ProtoReflect().Descriptor(), vs)
	want := []string{"is required (a non-empty string)", "is required (at least one item)", "value length must be at least 3 characters"}
	for i, v := range e.Violations {
		if v.GetMessage() != want[i] {
			t.Errorf("violation %d: %q, want %q", i, v.GetMessage(), want[i])
		}
	}
}
