package e2e

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsvc/toolsvc/internal/testkit/testserver"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGoldenToolSchemas pins the input and output JSON Schema of every
// tool: a contract change that alters what agents see shows up in review.
// Regenerate with `go test ./internal/tests/e2e -run TestGoldenToolSchemas -update`.
func TestGoldenToolSchemas(t *testing.T) {
	s := testserver.New(t, testserver.Options{})
	for _, tool := range s.Registry().All() {
		for kind, sch := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			got, err := json.MarshalIndent(sch, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "schemas", tool.Name+"@"+tool.Version+"."+kind+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s changed; review and rerun with -update", path)
			}
		}
	}
}
