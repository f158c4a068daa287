package schema_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/toolsvc/toolsvc/internal/contract/schema"
)

// goldenMessages are the test messages with a golden schema.
var goldenMessages = []string{"Scalars", "Collections", "WellKnown", "Tree", "Validated"}

func TestDeriveGolden(t *testing.T) {
	t.Parallel()
	for _, name := range goldenMessages {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := derive(t, name)
			golden(t, strings.ToLower(name)+".golden.json", marshalSchema(t, s))
			// The golden schema must itself be a valid 2020-12 schema.
			compileSchema(t, s)
		})
	}
}

func TestDeriveIsDeterministic(t *testing.T) {
	t.Parallel()
	first := marshalSchema(t, derive(t, "Everything"))
	for range 5 {
		if got := marshalSchema(t, derive(t, "Everything")); string(got) != string(first) {
			t.Fatal("two derivations of the same descriptor differ")
		}
	}
}

// TestDeriveInvariants walks every derived schema for the rules the package
// promises: closed objects, one type per property, no unions or references.
func TestDeriveInvariants(t *testing.T) {
	t.Parallel()
	s := derive(t, "Everything")
	var walk func(path string, node map[string]any)
	walk = func(path string, node map[string]any) {
		for _, k := range []string{"anyOf", "oneOf", "allOf", "not", "$ref", "$defs"} {
			if _, ok := node[k]; ok {
				t.Errorf("%s: has %s", path, k)
			}
		}
		typ, hasType := node["type"]
		if _, isString := typ.(string); hasType && !isString {
			t.Errorf("%s: type %v is not a single string", path, typ)
		}
		if !hasType && node["description"] != "Any JSON value." {
			t.Errorf("%s: no type outside google.protobuf.Value", path)
		}
		if props, ok := node["properties"].(map[string]any); ok {
			ap := node["additionalProperties"]
			_, anyType := props["@type"]
			if ap != false && !anyType {
				t.Errorf("%s: object with properties is not closed", path)
			}
			for name, p := range props {
				walk(path+"/properties/"+name, p.(map[string]any))
			}
		}
		for _, k := range []string{"items", "additionalProperties", "propertyNames"} {
			if sub, ok := node[k].(map[string]any); ok {
				walk(path+"/"+k, sub)
			}
		}
	}
	walk("", s)
}

func TestDeriveMapsFieldsLikeProtojson(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		message string
		pointer []string // path of property names and keywords
		want    any
	}{
		{name: "json name", message: "Scalars", pointer: []string{"properties", "fInt32", "type"}, want: "integer"},
		{name: "int32 minimum", message: "Scalars", pointer: []string{"properties", "fInt32", "minimum"}, want: int64(-2147483648)},
		{name: "uint32 maximum", message: "Scalars", pointer: []string{"properties", "fFixed32", "maximum"}, want: int64(4294967295)},
		{name: "int64 is a string", message: "Scalars", pointer: []string{"properties", "fSfixed64", "type"}, want: "string"},
		{name: "uint64 pattern", message: "Scalars", pointer: []string{"properties", "fUint64", "pattern"}, want: "^[0-9]+$"},
		{name: "bytes base64", message: "Scalars", pointer: []string{"properties", "fBytes", "contentEncoding"}, want: "base64"},
		{name: "field comment", message: "Scalars", pointer: []string{"properties", "fString", "description"}, want: "Free text."},
		{name: "default", message: "Scalars", pointer: []string{"properties", "fString", "default"}, want: "hello"},
		{name: "oneof note", message: "Scalars", pointer: []string{"properties", "byIndex", "description"},
			want: "Part of oneof selector: at most one of byName, byIndex, byInner may be set."},
		{name: "int key pattern", message: "Collections", pointer: []string{"properties", "byId", "propertyNames", "pattern"}, want: "^-?[0-9]+$"},
		{name: "bool key pattern", message: "Collections", pointer: []string{"properties", "byBool", "propertyNames", "pattern"}, want: "^(true|false)$"},
		{name: "map value", message: "Collections", pointer: []string{"properties", "counters", "additionalProperties", "type"}, want: "string"},
		{name: "timestamp", message: "WellKnown", pointer: []string{"properties", "createdAt", "format"}, want: "date-time"},
		{name: "struct is open", message: "WellKnown", pointer: []string{"properties", "attributes", "additionalProperties"}, want: true},
		{name: "int64 wrapper", message: "WellKnown", pointer: []string{"properties", "wInt64", "type"}, want: "string"},
		{name: "null value", message: "WellKnown", pointer: []string{"properties", "nullValue", "type"}, want: "null"},
		{name: "empty is closed", message: "WellKnown", pointer: []string{"properties", "nothing", "additionalProperties"}, want: false},
		{name: "recursion truncated", message: "Tree",
			pointer: []string{"properties", "parent", "properties", "parent", "properties", "parent", "additionalProperties"}, want: true},
		{name: "recursion expanded", message: "Tree",
			pointer: []string{"properties", "parent", "properties", "parent", "additionalProperties"}, want: false},
		{name: "min_len", message: "Validated", pointer: []string{"properties", "name", "minLength"}, want: uint64(3)},
		{name: "max_len", message: "Validated", pointer: []string{"properties", "name", "maxLength"}, want: uint64(64)},
		{name: "pattern", message: "Validated", pointer: []string{"properties", "code", "pattern"}, want: "^[A-Z]{3}$"},
		{name: "uuid", message: "Validated", pointer: []string{"properties", "id", "format"}, want: "uuid"},
		{name: "email", message: "Validated", pointer: []string{"properties", "email", "format"}, want: "email"},
		{name: "gt", message: "Validated", pointer: []string{"properties", "pageSize", "exclusiveMinimum"}, want: int64(0)},
		{name: "lte", message: "Validated", pointer: []string{"properties", "pageSize", "maximum"}, want: int64(100)},
		{name: "float bound keeps float32 text", message: "Validated", pointer: []string{"properties", "score", "exclusiveMinimum"}, want: 0.1},
		{name: "min_items", message: "Validated", pointer: []string{"properties", "tags", "minItems"}, want: uint64(1)},
		{name: "unique", message: "Validated", pointer: []string{"properties", "tags", "uniqueItems"}, want: true},
		{name: "items rules", message: "Validated", pointer: []string{"properties", "tags", "items", "maxLength"}, want: uint64(20)},
		{name: "max_pairs", message: "Validated", pointer: []string{"properties", "quotas", "maxProperties"}, want: uint64(10)},
		{name: "map values rules", message: "Validated", pointer: []string{"properties", "quotas", "additionalProperties", "minimum"}, want: int64(0)},
		{name: "map keys rules", message: "Validated", pointer: []string{"properties", "quotas", "propertyNames", "minLength"}, want: uint64(1)},
		{name: "prefix", message: "Validated", pointer: []string{"properties", "prefixed", "pattern"}, want: "^tool-"},
		{name: "wrapper rules", message: "Validated", pointer: []string{"properties", "nickname", "maxLength"}, want: uint64(10)},
		{name: "int64 in as strings", message: "Validated", pointer: []string{"properties", "budget", "enum"}, want: []any{"100", "200"}},
		{name: "enum not_in", message: "Validated", pointer: []string{"properties", "color", "enum"}, want: []any{"COLOR_RED", "COLOR_GREEN", "COLOR_BLUE"}},
		{name: "any in", message: "Validated", pointer: []string{"properties", "extra", "properties", "@type", "enum"},
			want: []any{"type.googleapis.com/google.protobuf.Duration"}},
		{name: "ignored rules", message: "Validated", pointer: []string{"properties", "legacy", "minLength"}, want: nil},
		{name: "cel message", message: "Validated", pointer: []string{"properties", "slug", "description"}, want: "slug must be lower case"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := lookup(t, derive(t, tt.message), tt.pointer)
			if !equalJSON(got, tt.want) {
				t.Errorf("%s at %v = %#v, want %#v", tt.message, tt.pointer, got, tt.want)
			}
		})
	}
}

func TestDeriveRequired(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		message string
		want    []string
	}{
		{name: "no rules", message: "Scalars", want: nil},
		{
			name:    "rules",
			message: "Validated",
			// id and inner are required; name, region, pageSize, tags and color
			// reject their zero value, which protojson omits.
			want: []string{"id", "name", "region", "pageSize", "tags", "color", "inner"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _ := derive(t, tt.message)["required"].([]string)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("required = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeriveMaxDepth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		maxDepth int
		want     int // expanded Tree levels along "parent"
	}{
		{name: "default", maxDepth: 0, want: schema.DefaultMaxDepth},
		{name: "one", maxDepth: 1, want: 1},
		{name: "five", maxDepth: 5, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := schema.Derive(message(t, "Tree"), schema.Options{MaxDepth: tt.maxDepth})
			if err != nil {
				t.Fatal(err)
			}
			levels := 0
			for node := s; node["additionalProperties"] == false; levels++ {
				node = node["properties"].(map[string]any)["parent"].(map[string]any)
			}
			if levels != tt.want {
				t.Errorf("expanded %d levels, want %d", levels, tt.want)
			}
		})
	}
}

func TestDeriveErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		md   protoreflect.MessageDescriptor
		want error
	}{
		{name: "nil", md: nil, want: schema.ErrNilDescriptor},
		{name: "timestamp is a string", md: (&timestamppb.Timestamp{}).ProtoReflect().Descriptor(), want: schema.ErrNotObject},
		{name: "mismatched rule", md: ruleMessage(t, `string f = 1 [(buf.validate.field).int32.gt = 1];`), want: schema.ErrRuleMismatch},
		{name: "repeated rule on scalar", md: ruleMessage(t, `string f = 1 [(buf.validate.field).repeated.min_items = 1];`), want: schema.ErrRuleMismatch},
		{name: "no enum value left", md: ruleMessage(t, `E f = 1 [(buf.validate.field).enum.in = 7];`), want: schema.ErrUnsatisfiable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := schema.Derive(tt.md, schema.Options{})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Derive error = %v, want %v", err, tt.want)
			}
			var de *schema.DeriveError
			if tt.md != nil && !errors.As(err, &de) {
				t.Errorf("error %T is not a *DeriveError", err)
			}
		})
	}
}

func TestDeriveTopLevelWellKnown(t *testing.T) {
	t.Parallel()
	s, err := schema.Derive((&emptypb.Empty{}).ProtoReflect().Descriptor(), schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s["$schema"] != schema.Draft202012 || s["additionalProperties"] != false {
		t.Errorf("Empty schema = %v", s)
	}
}

// lookup follows a path of keys through nested maps; nil when absent.
func lookup(tb testing.TB, s schema.Schema, path []string) any {
	tb.Helper()
	var node any = s
	for _, k := range path {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[k]
	}
	return node
}

// equalJSON compares two values by their JSON encoding.
func equalJSON(a, b any) bool {
	ja, errA := jsonString(a)
	jb, errB := jsonString(b)
	return errA == nil && errB == nil && ja == jb
}
