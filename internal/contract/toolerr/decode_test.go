package toolerr_test

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

func TestDecodeReason(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"proto: (line 1:2): unknown field \"foo\"", `unknown field "foo"`},
		{"proto:\u00a0(line 12:345): invalid value for int32 field limit: \"x\"", `invalid value for int32 field limit: "x"`},
		{"proto: syntax error (line 1:1): unexpected token", "syntax error (line 1:1): unexpected token"},
		{"json: cannot unmarshal", "json: cannot unmarshal"},
		{"", ""},
	} {
		if got := toolerr.DecodeReason(tc.in); got != tc.want {
			t.Errorf("DecodeReason(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestDecodeReasonOfRealErrors feeds the errors protojson itself returns,
// so a change of its wording shows here first.
func TestDecodeReasonOfRealErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"name": "a", "foo": 2}`, `unknown field "foo"`},
		{`{"number": "x"}`, `invalid value for int32 field number: "x"`},
		{"{\n\n  \"number\": true}", `invalid value for int32 field number: true`},
	} {
		err := protojson.Unmarshal([]byte(tc.in), &descriptorpb.FieldDescriptorProto{})
		if err == nil {
			t.Fatalf("protojson accepted %s", tc.in)
		}
		if got := toolerr.DecodeReason(err.Error()); got != tc.want {
			t.Errorf("DecodeReason(%q) = %q, want %q", err.Error(), got, tc.want)
		}
	}
}
