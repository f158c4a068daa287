package schema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolsvc/toolsvc/internal/contract/schema"
)

// TestMinimal: the minimal value of each schema is accepted by a JSON
// Schema validator, holds only the required properties, and is the
// expected value.
func TestMinimal(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"memory id", `{"type":"object","required":["memoryId"],"properties":{"memoryId":{"type":"string","pattern":"^mem_[0-9a-f]{32}$"},"other":{"type":"string"}}}`,
			`{"memoryId":"mem_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`},
		{"knowledge id", `{"type":"object","required":["id"],"properties":{"id":{"type":"string","pattern":"^[a-z0-9][a-z0-9._-]{0,127}$"}}}`, `{"id":"a"}`},
		{"semver", `{"type":"object","required":["v"],"properties":{"v":{"type":"string","pattern":"^(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)$"}}}`, `{"v":"0.0.0"}`},
		{"pattern padded to minLength", `{"type":"object","required":["s"],"properties":{"s":{"type":"string","pattern":"^[a-z][a-z0-9-]{1,40}$","minLength":5}}}`, `{"s":"aaaaa"}`},
		{"min length", `{"type":"object","required":["s"],"properties":{"s":{"type":"string","minLength":3}}}`, `{"s":"aaa"}`},
		{"enum, default, example", `{"type":"object","required":["e","d","x"],"properties":{"e":{"type":"string","enum":["b","c"]},"d":{"type":"integer","default":7},"x":{"type":"string","examples":["ex"]}}}`,
			`{"d":7,"e":"b","x":"ex"}`},
		{"ranges", `{"type":"object","required":["a","b","c","f"],"properties":{"a":{"type":"integer","minimum":1,"maximum":50},"b":{"type":"integer","exclusiveMinimum":0},"c":{"type":"integer","maximum":-3},"f":{"type":"number","exclusiveMinimum":0.5}}}`,
			`{"a":1,"b":1,"c":-3,"f":1.5}`},
		{"array min items", `{"type":"object","required":["l"],"properties":{"l":{"type":"array","minItems":2,"items":{"type":"object","required":["n"],"properties":{"n":{"type":"boolean"}}}}}}`,
			`{"l":[{"n":false},{"n":false}]}`},
		{"ref and type list", `{"type":"object","required":["r"],"properties":{"r":{"$ref":"#/$defs/t"}},"$defs":{"t":{"type":["null","string"],"format":"date-time"}}}`,
			`{"r":"2026-01-02T03:04:05Z"}`},
		{"nothing required", `{"type":"object","properties":{"q":{"type":"string"}}}`, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s schema.Schema
			if err := json.Unmarshal([]byte(tt.schema), &s); err != nil {
				t.Fatal(err)
			}
			v, err := schema.Minimal(s)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(v)
			if string(got) != tt.want {
				t.Errorf("Minimal = %s, want %s", got, tt.want)
			}
			doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(tt.schema)))
			c := jsonschema.NewCompiler()
			c.AssertFormat()
			if err := c.AddResource("urn:t", doc); err != nil {
				t.Fatal(err)
			}
			sch, err := c.Compile("urn:t")
			if err != nil {
				t.Fatal(err)
			}
			inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(got))
			if err := sch.Validate(inst); err != nil {
				t.Errorf("the minimal value is refused by its schema: %v", err)
			}
		})
	}
}

// TestMinimalRefusesImpossible: a schema no value satisfies is an error
// naming the field, not a wrong value.
func TestMinimalRefusesImpossible(t *testing.T) {
	for _, raw := range []string{
		`{"type":"object","required":["s"],"properties":{"s":{"type":"string","pattern":"^a$","minLength":2}}}`,
		`{"type":"object","required":["s"],"properties":{"s":{"type":"integer","minimum":5,"maximum":4}}}`,
	} {
		var s schema.Schema
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatal(err)
		}
		if _, err := schema.Minimal(s); !errors.Is(err, schema.ErrNoInstance) {
			t.Errorf("%s: err = %v, want ErrNoInstance", raw, err)
		}
	}
}
