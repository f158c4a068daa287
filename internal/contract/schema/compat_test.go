package schema_test

import (
	"encoding/json"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/schema"
)

func TestCompareClassifiesTheBump(t *testing.T) {
	base := `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
		"id":{"type":"string","description":"Id.","minLength":1},
		"color":{"type":"string","enum":["red","blue"],"description":"Color."}}}`
	cases := []struct {
		name   string
		new    string
		output bool
		want   schema.Change
	}{
		{"same", base, false, schema.Same},
		{"description", `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
			"id":{"type":"string","description":"The id.","minLength":1},
			"color":{"type":"string","enum":["red","blue"],"description":"Color."}}}`, false, schema.Documentation},
		{"new optional parameter", `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
			"id":{"type":"string","description":"Id.","minLength":1},
			"size":{"type":"integer","description":"Size."},
			"color":{"type":"string","enum":["red","blue"],"description":"Color."}}}`, false, schema.Additive},
		{"new required parameter", `{"type":"object","additionalProperties":false,"required":["id","size"],"properties":{
			"id":{"type":"string","description":"Id.","minLength":1},
			"size":{"type":"integer","description":"Size."},
			"color":{"type":"string","enum":["red","blue"],"description":"Color."}}}`, false, schema.Breaking},
		{"new output field, always present", `{"type":"object","additionalProperties":false,"required":["id","size"],"properties":{
			"id":{"type":"string","description":"Id.","minLength":1},
			"size":{"type":"integer","description":"Size."},
			"color":{"type":"string","enum":["red","blue"],"description":"Color."}}}`, true, schema.Additive},
		{"existing parameter now required", `{"type":"object","additionalProperties":false,"required":["id","color"],"properties":{
			"id":{"type":"string","description":"Id.","minLength":1},
			"color":{"type":"string","enum":["red","blue"],"description":"Color."}}}`, false, schema.Breaking},
		{"parameter removed", `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
			"id":{"type":"string","description":"Id.","minLength":1}}}`, false, schema.Breaking},
		{"parameter renamed", `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
			"id":{"type":"string","description":"Id.","minLength":1},
			"colour":{"type":"string","enum":["red","blue"],"description":"Color."}}}`, false, schema.Breaking},
		{"parameter retyped", `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
			"id":{"type":"integer","description":"Id.","minLength":1},
			"color":{"type":"string","enum":["red","blue"],"description":"Color."}}}`, false, schema.Breaking},
		{"constraint changed", `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
			"id":{"type":"string","description":"Id.","minLength":2},
			"color":{"type":"string","enum":["red","blue"],"description":"Color."}}}`, false, schema.Breaking},
		{"enum value added", `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
			"id":{"type":"string","description":"Id.","minLength":1},
			"color":{"type":"string","enum":["red","blue","green"],"description":"Color."}}}`, false, schema.Additive},
		{"enum value removed", `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
			"id":{"type":"string","description":"Id.","minLength":1},
			"color":{"type":"string","enum":["red"],"description":"Color."}}}`, false, schema.Breaking},
		{"requirement dropped", `{"type":"object","additionalProperties":false,"properties":{
			"id":{"type":"string","description":"Id.","minLength":1},
			"color":{"type":"string","enum":["red","blue"],"description":"Color."}}}`, false, schema.Additive},
		{"output field no longer always present", `{"type":"object","additionalProperties":false,"properties":{
			"id":{"type":"string","description":"Id.","minLength":1},
			"color":{"type":"string","enum":["red","blue"],"description":"Color."}}}`, true, schema.Breaking},
	}
	var old map[string]any
	if err := json.Unmarshal([]byte(base), &old); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var next map[string]any
			if err := json.Unmarshal([]byte(tc.new), &next); err != nil {
				t.Fatal(err)
			}
			got, reasons := schema.Compare(old, next, tc.output)
			if got != tc.want {
				t.Fatalf("Compare = %v %v, want %v", got, reasons, tc.want)
			}
			if got > schema.Same && len(reasons) == 0 {
				t.Fatal("a change without a reason")
			}
		})
	}
}
