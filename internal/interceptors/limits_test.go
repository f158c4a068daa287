package interceptors

import (
	"testing"

	"google.golang.org/protobuf/types/known/anypb"
)

// TestAnyNeedsItsType: protojson reads {} as an Any with no type URL; the
// chain refuses it, as the derived schema does (which requires "@type").
func TestAnyNeedsItsType(t *testing.T) {
	if e := limits((&anypb.Any{}).ProtoReflect(), DefaultMaxJSONDepth); e == nil || e.Violations[0].GetRule() != "any.type_url" {
		t.Fatalf("an Any without a type: %v, want INVALID_INPUT any.type_url", e)
	}
	typed := &anypb.Any{TypeUrl: "type.googleapis.com/google.protobuf.Empty"}
	if e := limits(typed.ProtoReflect(), DefaultMaxJSONDepth); e != nil {
		t.Fatalf("an Any with a type: %v", e)
	}
}
