package registry

import (
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/toolsvc/toolsvc/gen/descriptor"
	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
)

// TestToStructMatchesJSON holds the direct conversion of schemas and
// examples equal to the one through JSON on every built-in tool, and
// requires that none of them needs the JSON way.
func TestToStructMatchesJSON(t *testing.T) {
	r, err := New([]Service{
		{Desc: &memoryv1.MemoryService_ServiceDesc, Impl: memoryv1.UnimplementedMemoryServiceServer{}},
		{Desc: &knowledgev1.KnowledgeService_ServiceDesc, Impl: knowledgev1.UnimplementedKnowledgeServiceServer{}},
		{Desc: &syncv1.SyncService_ServiceDesc, Impl: syncv1.UnimplementedSyncServiceServer{}},
		{Desc: &auditv1.AuditService_ServiceDesc, Impl: auditv1.UnimplementedAuditServiceServer{}},
	}, WithSourceInfo(descriptor.Set))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tl := range r.All() {
		values := []map[string]any{tl.InputSchema, tl.OutputSchema}
		for _, ex := range tl.Examples {
			values = append(values, ex.ParamsJSON, ex.Expected)
		}
		for i, v := range values {
			if v == nil {
				continue
			}
			n++
			direct, ok := structOf(v)
			if !ok {
				t.Errorf("%s value %d: a type the direct conversion does not know", tl.Name, i)
				continue
			}
			if want := toStructJSON(v); !proto.Equal(direct, want) {
				t.Errorf("%s value %d: direct conversion differs from JSON's", tl.Name, i)
			}
		}
	}
	if n < 40 {
		t.Fatalf("only %d schemas and examples compared", n)
	}
}

// TestToStructFallsBackToJSON: values the direct way does not take go
// through JSON as before: a typed value JSON encodes, a number JSON
// cannot hold (refused, nil), bytes that are not UTF-8 (replaced).
func TestToStructFallsBackToJSON(t *testing.T) {
	type named struct {
		A int `json:"a"`
	}
	cases := map[string]map[string]any{
		"struct":  {"x": named{A: 1}},
		"int32s":  {"x": []int32{1, 2}},
		"bad utf": {"x": "a\xffb"},
	}
	for name, v := range cases {
		if _, ok := structOf(v); ok {
			t.Errorf("%s: taken directly", name)
		}
		if got, want := toStruct(v), toStructJSON(v); want == nil || !proto.Equal(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if got := toStruct(map[string]any{"x": math.NaN()}); got != nil {
		t.Errorf("NaN: %v, want nil (as JSON refuses it)", got)
	}
	if got := toStruct(map[string]any{"n": 3, "l": []string{"a"}, "m": map[string]any{"b": true, "z": nil}}); got.GetFields()["n"].GetNumberValue() != 3 ||
		got.GetFields()["l"].GetListValue().GetValues()[0].GetStringValue() != "a" || !got.GetFields()["m"].GetStructValue().GetFields()["b"].GetBoolValue() {
		t.Errorf("direct: %v", got)
	}
}
