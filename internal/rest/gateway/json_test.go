package gateway

import (
	"bytes"
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

// TestStableJSONIsCompact: whatever spacing protojson picked in this build,
// the REST answer has none, and a string's own spaces stay (the spacing
// used to differ between releases).
func TestStableJSONIsCompact(t *testing.T) {
	for _, in := range []string{
		`{"a":1,"b":["x","y, z"],"c":{"d":true}}`,
		`{"a": 1, "b": ["x", "y, z", "q\", w"], "c": {"d": true}}`,
	} {
		got := dropCommaSpaces([]byte(in))
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(in)); err != nil {
			t.Fatal(err)
		}
		// protojson's compact form never writes ": " (only ", "), so the
		// input's ": " is taken out here before comparing.
		if got = bytes.ReplaceAll(got, []byte(`": `), []byte(`":`)); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("dropCommaSpaces(%s) = %s, want %s", in, got, want.Bytes())
		}
	}
	v, _ := structpb.NewStruct(map[string]any{"a": 1, "b": []any{"x", "y, z"}})
	m := &stableJSON{}
	b, err := m.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, b); err != nil || !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("not compact: %s", b)
	}
}

// BenchmarkCompact: the cost in a build whose protojson adds spaces (a
// typical 4 KB answer); in one that adds none Marshal skips it.
func BenchmarkCompact(b *testing.B) {
	in := bytes.Repeat([]byte(`{"action":"search-memories", "priority":"low", "data":{"layers":["project"]}}, `), 50)
	in = append(append([]byte("["), in[:len(in)-2]...), ']')
	buf := make([]byte, len(in))
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		copy(buf, in)
		dropCommaSpaces(buf)
	}
}
