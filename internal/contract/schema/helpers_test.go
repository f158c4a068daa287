package schema_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"

	_ "buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate" // links buf/validate/validate.proto
	"github.com/bufbuild/protocompile"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/toolsvc/toolsvc/internal/contract/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var (
	compileOnce sync.Once
	compiled    protoreflect.FileDescriptor
	compileErr  error
)

// testFile compiles testdata/schematest.proto once per test binary. Standard
// imports come from protocompile, buf/validate/validate.proto from the linked
// Go descriptor, so no generated code is needed.
func testFile(tb testing.TB) protoreflect.FileDescriptor {
	tb.Helper()
	compileOnce.Do(func() {
		compiled, compileErr = compileProto(&protocompile.SourceResolver{ImportPaths: []string{"testdata"}}, "schematest.proto")
	})
	if compileErr != nil {
		tb.Fatalf("compile schematest.proto: %v", compileErr)
	}
	return compiled
}

// compileProto compiles one file with source info; buf/validate/validate.proto
// resolves to the descriptor linked from its Go package.
func compileProto(sources *protocompile.SourceResolver, name string) (protoreflect.FileDescriptor, error) {
	c := protocompile.Compiler{
		Resolver: protocompile.CompositeResolver{
			protocompile.WithStandardImports(sources),
			protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
				fd, err := protoregistry.GlobalFiles.FindFileByPath(path)
				if err != nil {
					return protocompile.SearchResult{}, err
				}
				return protocompile.SearchResult{Desc: fd}, nil
			}),
		},
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	files, err := c.Compile(context.Background(), name)
	if err != nil {
		return nil, err
	}
	return files[0], nil
}

// ruleMessage compiles a message M holding the given field declarations,
// next to an enum E { E_ZERO = 0; E_ONE = 1; }.
func ruleMessage(tb testing.TB, fields string) protoreflect.MessageDescriptor {
	tb.Helper()
	src := `syntax = "proto3";
package rules.v1;
import "buf/validate/validate.proto";
enum E { E_ZERO = 0; E_ONE = 1; }
message M { ` + fields + ` }
`
	fd, err := compileProto(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"rules.proto": src}),
	}, "rules.proto")
	if err != nil {
		tb.Fatalf("compile %q: %v", fields, err)
	}
	return fd.Messages().ByName("M")
}

// jsonString encodes v as compact JSON.
func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// message returns a message of the test file by short name.
func message(tb testing.TB, name string) protoreflect.MessageDescriptor {
	tb.Helper()
	md := testFile(tb).Messages().ByName(protoreflect.Name(name))
	if md == nil {
		tb.Fatalf("no message %s in schematest.proto", name)
	}
	return md
}

// testDefaults declares defaults for a few fields, as a registry would.
func testDefaults(fd protoreflect.FieldDescriptor) (any, bool) {
	switch fd.FullName() {
	case "schematest.v1.Scalars.f_string":
		return "hello", true
	case "schematest.v1.Validated.page_size":
		return 20, true
	}
	return nil, false
}

// derive derives the schema of a test message with the test defaults.
func derive(tb testing.TB, name string) schema.Schema {
	tb.Helper()
	s, err := schema.Derive(message(tb, name), schema.Options{FieldDefault: testDefaults})
	if err != nil {
		tb.Fatalf("Derive(%s): %v", name, err)
	}
	return s
}

// marshalSchema renders a schema as indented JSON with a final newline.
func marshalSchema(tb testing.TB, s schema.Schema) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		tb.Fatalf("marshal schema: %v", err)
	}
	return buf.Bytes()
}

// compileSchema compiles a derived schema with format and content assertions
// on, so "date-time", "email", "uuid" and base64 are checked too.
func compileSchema(tb testing.TB, s schema.Schema) *jsonschema.Schema {
	tb.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(marshalSchema(tb, s)))
	if err != nil {
		tb.Fatalf("reparse schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.AssertContent()
	if err := c.AddResource("mem://schema.json", doc); err != nil {
		tb.Fatalf("add schema: %v", err)
	}
	compiledSchema, err := c.Compile("mem://schema.json")
	if err != nil {
		tb.Fatalf("compile schema: %v", err)
	}
	return compiledSchema
}

// validateJSON validates a JSON document against a compiled schema.
func validateJSON(tb testing.TB, sch *jsonschema.Schema, data []byte) error {
	tb.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		tb.Fatalf("parse instance %s: %v", data, err)
	}
	return sch.Validate(inst)
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatalf("write golden: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s differs from the derived schema (run with -update after checking):\n%s", path, got)
	}
}
