package schema_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolsvc/toolsvc/internal/contract/schema"
)

func TestCheckProvidersDerived(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		message string
		want    []schema.Problem
	}{
		{name: "scalars pass", message: "Scalars"},
		{name: "validated: only the Any and the map are open", message: "Validated", want: []schema.Problem{
			{Provider: schema.ProviderOpenAI, Path: "/properties/extra", Rule: schema.RuleOpenObject},
			{Provider: schema.ProviderOpenAI, Path: "/properties/quotas", Rule: schema.RuleOpenObject},
		}},
		{name: "tree: truncated recursion is open", message: "Tree", want: treeProblems()},
		{name: "maps are open objects for openai", message: "Collections", want: []schema.Problem{
			{Provider: schema.ProviderOpenAI, Path: "/properties/byBool", Rule: schema.RuleOpenObject},
			{Provider: schema.ProviderOpenAI, Path: "/properties/byId", Rule: schema.RuleOpenObject},
			{Provider: schema.ProviderOpenAI, Path: "/properties/counters", Rule: schema.RuleOpenObject},
			{Provider: schema.ProviderOpenAI, Path: "/properties/flags", Rule: schema.RuleOpenObject},
			{Provider: schema.ProviderOpenAI, Path: "/properties/labels", Rule: schema.RuleOpenObject},
		}},
		{name: "struct, any and value", message: "WellKnown", want: []schema.Problem{
			{Provider: schema.ProviderGemini, Path: "/properties/anything", Rule: schema.RuleMissingType},
			{Provider: schema.ProviderOpenAI, Path: "/properties/anything", Rule: schema.RuleMissingType},
			{Provider: schema.ProviderOpenAI, Path: "/properties/attributes", Rule: schema.RuleOpenObject},
			{Provider: schema.ProviderOpenAI, Path: "/properties/detail", Rule: schema.RuleOpenObject},
			{Provider: schema.ProviderGemini, Path: "/properties/list/items", Rule: schema.RuleMissingType},
			{Provider: schema.ProviderOpenAI, Path: "/properties/list/items", Rule: schema.RuleMissingType},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := schema.CheckProviders(derive(t, tt.message))
			if !slices.Equal(got, tt.want) {
				t.Errorf("CheckProviders:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestCheckProvidersBadSchemas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		want   []schema.Problem
	}{
		{
			name:   "compatible",
			schema: `{"type":"object","properties":{"a":{"type":"string","minLength":1}},"required":["a"],"additionalProperties":false}`,
		},
		{
			name:   "top-level anyOf",
			schema: `{"type":"object","anyOf":[{"type":"object","additionalProperties":false}],"additionalProperties":false}`,
			want: []schema.Problem{
				{Provider: schema.ProviderAnthropic, Path: "/anyOf", Rule: schema.RuleRootCombinator},
				{Provider: schema.ProviderGemini, Path: "/anyOf", Rule: schema.RuleRootCombinator},
				{Provider: schema.ProviderOpenAI, Path: "/anyOf", Rule: schema.RuleRootCombinator},
			},
		},
		{
			name:   "root is not an object",
			schema: `{"type":"string"}`,
			want: []schema.Problem{
				{Provider: schema.ProviderAnthropic, Path: "", Rule: schema.RuleRootNotObject},
				{Provider: schema.ProviderGemini, Path: "", Rule: schema.RuleRootNotObject},
				{Provider: schema.ProviderOpenAI, Path: "", Rule: schema.RuleRootNotObject},
			},
		},
		{
			name:   "type array",
			schema: `{"type":"object","properties":{"a":{"type":["string","null"]}},"additionalProperties":false}`,
			want: []schema.Problem{
				{Provider: schema.ProviderGemini, Path: "/properties/a/type", Rule: schema.RuleTypeArray},
				{Provider: schema.ProviderOpenAI, Path: "/properties/a/type", Rule: schema.RuleTypeArray},
			},
		},
		{
			name: "ref",
			schema: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"additionalProperties":false,` +
				`"$defs":{"A":{"type":"string"}}}`,
			want: []schema.Problem{
				{Provider: schema.ProviderGemini, Path: "/$defs", Rule: schema.RuleRef},
				{Provider: schema.ProviderGemini, Path: "/properties/a/$ref", Rule: schema.RuleRef},
			},
		},
		{
			name:   "missing additionalProperties",
			schema: `{"type":"object","properties":{"a":{"type":"object","properties":{}}},"additionalProperties":false}`,
			want: []schema.Problem{
				{Provider: schema.ProviderOpenAI, Path: "/properties/a", Rule: schema.RuleOpenObject},
			},
		},
		{
			name:   "shape keywords",
			schema: `{"type":"object","properties":{"a":{"type":"string","not":{"const":"x"},"nullable":true}},"additionalProperties":false}`,
			want: []schema.Problem{
				{Provider: schema.ProviderGemini, Path: "/properties/a/not", Rule: schema.RuleUnsupportedKeyword},
				{Provider: schema.ProviderOpenAI, Path: "/properties/a/not", Rule: schema.RuleUnsupportedKeyword},
				{Provider: schema.ProviderAnthropic, Path: "/properties/a/nullable", Rule: schema.RuleUnsupportedKeyword},
				{Provider: schema.ProviderGemini, Path: "/properties/a/nullable", Rule: schema.RuleUnsupportedKeyword},
				{Provider: schema.ProviderOpenAI, Path: "/properties/a/nullable", Rule: schema.RuleUnsupportedKeyword},
			},
		},
		{
			name:   "boolean enum",
			schema: `{"type":"object","properties":{"a":{"type":"boolean","enum":[true]}},"additionalProperties":false}`,
			want: []schema.Problem{
				{Provider: schema.ProviderGemini, Path: "/properties/a/enum", Rule: schema.RuleEnumValueType},
			},
		},
		{
			name:   "escaped pointer",
			schema: `{"type":"object","properties":{"a/b~c":{"type":"object"}},"additionalProperties":false}`,
			want: []schema.Problem{
				{Provider: schema.ProviderOpenAI, Path: "/properties/a~1b~0c", Rule: schema.RuleOpenObject},
			},
		},
		{
			name:   "too deep",
			schema: nested(11),
			want: []schema.Problem{
				{Provider: schema.ProviderOpenAI, Path: strings.Repeat("/properties/p", 10), Rule: schema.RuleNestingDepth},
			},
		},
		{name: "deep enough", schema: nested(10)},
		{
			name:   "too many properties",
			schema: wide(5001),
			want: []schema.Problem{
				// Properties are counted in sorted order: p999 is the 5,001st.
				{Provider: schema.ProviderOpenAI, Path: "/properties/p999", Rule: schema.RulePropertyCount},
			},
		},
		{
			name:   "too many enum values",
			schema: enumSchema(2, 501, 1),
			want: []schema.Problem{
				{Provider: schema.ProviderOpenAI, Path: "/properties/p1/enum", Rule: schema.RuleEnumCount},
			},
		},
		{
			name:   "large enum too long",
			schema: enumSchema(1, 251, 60),
			want: []schema.Problem{
				{Provider: schema.ProviderOpenAI, Path: "/properties/p0/enum", Rule: schema.RuleLargeEnumLength},
			},
		},
		{
			name:   "names and values too long",
			schema: enumSchema(5, 200, 121),
			want: []schema.Problem{
				{Provider: schema.ProviderOpenAI, Path: "/properties/p4/enum", Rule: schema.RuleStringLength},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := schema.CheckProviders(parseSchema(t, tt.schema))
			if !slices.Equal(got, tt.want) {
				t.Errorf("CheckProviders:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestProblemString(t *testing.T) {
	t.Parallel()
	p := schema.Problem{Provider: schema.ProviderOpenAI, Path: "", Rule: schema.RuleRootNotObject}
	if got, want := p.String(), "openai: (root): root-not-object"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// treeProblems lists the truncated Tree nodes (MaxDepth 3): every path of
// three expanded levels ends in two open objects.
func treeProblems() []schema.Problem {
	var out []schema.Problem
	steps := []string{"/properties/children/items", "/properties/parent"}
	for _, a := range steps {
		for _, b := range steps {
			for _, c := range steps {
				out = append(out, schema.Problem{Provider: schema.ProviderOpenAI, Path: a + b + c, Rule: schema.RuleOpenObject})
			}
		}
	}
	slices.SortFunc(out, func(x, y schema.Problem) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// parseSchema decodes a JSON schema the way a hand-written one arrives.
func parseSchema(tb testing.TB, s string) schema.Schema {
	tb.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(s)))
	if err != nil {
		tb.Fatalf("parse %s: %v", s, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		tb.Fatalf("%s is not an object", s)
	}
	return m
}

// nested returns a closed schema with depth levels of nested objects.
func nested(depth int) string {
	s := `{"type":"object","properties":{},"additionalProperties":false}`
	for range depth - 1 {
		s = `{"type":"object","properties":{"p":` + s + `},"additionalProperties":false}`
	}
	return s
}

// wide returns a closed schema with n string properties p0..p(n-1).
func wide(n int) string {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"string"}`, i)
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"additionalProperties":false}`
}

// enumSchema returns a closed schema with fields string enums of size values,
// each value length characters long.
func enumSchema(fields, size, length int) string {
	props := make([]string, fields)
	for f := range props {
		values := make([]string, size)
		for i := range values {
			v := fmt.Sprintf("%d-%d-", f, i)
			values[i] = `"` + v + strings.Repeat("x", max(0, length-len(v))) + `"`
		}
		props[f] = fmt.Sprintf(`"p%d":{"type":"string","enum":[%s]}`, f, strings.Join(values, ","))
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"additionalProperties":false}`
}
