package schema_test

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/types/known/sourcecontextpb"

	"github.com/toolsvc/toolsvc/internal/contract/schema"
)

func ExampleDerive() {
	md := (&sourcecontextpb.SourceContext{}).ProtoReflect().Descriptor()
	s, err := schema.Derive(md, schema.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(s)
	fmt.Println(string(out))
	// Output:
	// {"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":false,"properties":{"fileName":{"type":"string"}},"type":"object"}
}

func ExampleCheckProviders() {
	s := schema.Schema{
		"type":       "object",
		"properties": map[string]any{"when": map[string]any{"type": []any{"string", "null"}}},
	}
	for _, p := range schema.CheckProviders(s) {
		fmt.Println(p)
	}
	// Output:
	// openai: (root): additional-properties-not-false
	// gemini: /properties/when/type: type-array
	// openai: /properties/when/type: type-array
}
