package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestExamplesAreExecutable runs every example of every tool (docs/CONTRACTS.md:
// examples are documentation that must stay true): the params go through
// the whole chain, the outcome must be the expected one, every field of the
// expected result must match, and a success must conform to the tool's
// derived output schema.
func TestExamplesAreExecutable(t *testing.T) {
	for _, backend := range []string{testserver.SQLite, testserver.Postgres} {
		t.Run(backend, func(t *testing.T) {
			// The examples speak of tenant acme's knowledge (ADR-042 of
			// org acme-org): run them as its full key.
			c := testserver.WriteCredentials(t)
			s := testserver.New(t, testserver.Options{Backend: backend, Configure: func(cfg *server.Config) { cfg.AuthFile = c.AuthFile }})
			tr := GRPC{S: s}
			for _, tool := range s.Registry().All() {
				validate := compileSchema(t, tool)
				for i, ex := range tool.Examples {
					t.Run(fmt.Sprintf("%s/%d", tool.Name, i), func(t *testing.T) {
						out, err := tr.Call(context.Background(), c.Full, tool.Name, ex.ParamsJSON, nil)
						if err != nil {
							t.Fatal(err)
						}
						want := ex.ErrorCode
						if want == "" {
							want = "OK"
						}
						if out.Code != want {
							t.Fatalf("%q: code %s, want %s (%v)", ex.Description, out.Code, want, out.Error)
						}
						got := out.Error
						if want == "OK" {
							got = out.Result["data"].(map[string]any)
							if err := validate.Validate(roundTrip(t, out.Result)); err != nil {
								t.Fatalf("result does not conform to the output schema: %v", err)
							}
						}
						if path, ok := subset(ex.Expected, got, ""); !ok {
							t.Fatalf("%q: expected %s to match\nwant %v\ngot  %v", ex.Description, path, ex.Expected, got)
						}
					})
				}
			}
		})
	}
}

func compileSchema(t *testing.T, tool *registry.Tool) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	url := "mem://" + tool.Name + "/" + tool.Version + "/output.json"
	if err := c.AddResource(url, roundTrip(t, tool.OutputSchema)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: output schema does not compile: %v", tool.Name, err)
	}
	return s
}

// roundTrip turns a Go value into what the JSON Schema validator expects.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// subset reports whether every field of want is in got with an equal value
// (objects recursively, arrays element-wise), naming the first mismatch.
func subset(want, got any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for k, wv := range w {
			if p, ok := subset(wv, g[k], path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := subset(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	default:
		return path, reflect.DeepEqual(want, got)
	}
}
