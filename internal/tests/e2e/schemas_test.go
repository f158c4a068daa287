package e2e

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/schema"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGoldenToolSchemas records the published input and output JSON Schema
// of every name@version and holds the version to them (docs/CONTRACTS.md,
// "Versions"): a recorded schema never changes except in its documentation
// (description, title, examples, default), and a new version's schema must
// have moved from the previous recorded version by no more than its bump
// allows — a minor bump for additions, a major one for breaking changes.
// -update records new versions and documentation changes, never a contract
// change under a recorded version.
// Regenerate with `go test ./internal/tests/e2e -run TestGoldenToolSchemas -update`.
func TestGoldenToolSchemas(t *testing.T) {
	s := testserver.New(t, testserver.Options{})
	dir := filepath.Join("testdata", "schemas")
	for _, tool := range s.Registry().All() {
		for kind, sch := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			got, err := json.MarshalIndent(sch, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join(dir, tool.Name+"@"+tool.Version+"."+kind+".json")
			msg, write := judgeSchema(dir, tool.Name, tool.Version, kind, got)
			switch {
			case msg == "":
			case write && *update:
				t.Logf("%s: %s; recorded", path, msg)
			default:
				t.Errorf("%s: %s", path, msg)
				continue
			}
			if write && *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// judgeSchema compares got, the kind ("input" or "output") schema tool
// name@version publishes, with the records in dir. It returns what is
// wrong ("" if nothing) and whether -update may record got.
func judgeSchema(dir, name, version, kind string, got []byte) (string, bool) {
	output := kind == "output"
	want, err := os.ReadFile(filepath.Join(dir, name+"@"+version+"."+kind+".json"))
	if err == nil {
		if bytes.Equal(got, want) {
			return "", false
		}
		change, reasons := compareJSON(want, got, output)
		if change <= schema.Documentation {
			return "the documentation changed (run with -update to record it)", true
		}
		v, _ := parseVersion(version)
		need := fmt.Sprintf("%d.%d.0", v[0], v[1]+1)
		if change == schema.Breaking {
			need = fmt.Sprintf("%d.0.0", v[0]+1)
		}
		return fmt.Sprintf("the published %s schema of %s@%s changed (%v: %s); a published version never changes: "+
			"give the tool version %s or higher and leave %s@%s as recorded", kind, name, version, change, strings.Join(reasons, "; "), need, name, version), false
	}
	prev, prevRaw := previousRecord(dir, name, version, kind)
	if prev == "" {
		return "not recorded yet (run with -update to record it)", true
	}
	change, reasons := compareJSON(prevRaw, got, output)
	if ok, need := bumpAllows(prev, version, change); !ok {
		return fmt.Sprintf("%s@%s's %s schema is %v against the recorded %s (%s): the version must be %s or higher",
			name, version, kind, change, prev, strings.Join(reasons, "; "), need), false
	}
	return "a new version (run with -update to record it)", true
}

// bumpAllows reports whether going from version prev to next is a big
// enough bump for change, and the smallest version that would be.
func bumpAllows(prev, next string, change schema.Change) (bool, string) {
	p, _ := parseVersion(prev)
	n, _ := parseVersion(next)
	switch change {
	case schema.Breaking:
		return n[0] > p[0], fmt.Sprintf("%d.0.0", p[0]+1)
	case schema.Additive:
		return n[0] > p[0] || (n[0] == p[0] && n[1] > p[1]), fmt.Sprintf("%d.%d.0", p[0], p[1]+1)
	default:
		return true, next
	}
}

// previousRecord returns the highest recorded version of name below
// version, and its kind schema.
func previousRecord(dir, name, version, kind string) (string, []byte) {
	entries, _ := os.ReadDir(dir)
	cur, _ := parseVersion(version)
	var best string
	var bestV [3]int
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), name+"@")
		if !ok {
			continue
		}
		ver, ok := strings.CutSuffix(rest, "."+kind+".json")
		if !ok {
			continue
		}
		v, ok := parseVersion(ver)
		if !ok || !less(v, cur) || (best != "" && !less(bestV, v)) {
			continue
		}
		best, bestV = ver, v
	}
	if best == "" {
		return "", nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, name+"@"+best+"."+kind+".json"))
	if err != nil {
		return "", nil
	}
	return best, raw
}

func compareJSON(old, new []byte, output bool) (schema.Change, []string) {
	var o, n map[string]any
	if json.Unmarshal(old, &o) != nil || json.Unmarshal(new, &n) != nil {
		return schema.Breaking, []string{"a schema is not a JSON object"}
	}
	return schema.Compare(o, n, output)
}

func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// TestSchemaChangeNeedsAVersion: the judge of TestGoldenToolSchemas
// refuses a contract change under a recorded version (and -update cannot
// record it), and a new version whose bump is too small for its change.
func TestSchemaChangeNeedsAVersion(t *testing.T) {
	dir := t.TempDir()
	recorded := `{"type":"object","additionalProperties":false,"required":["id"],"properties":{"id":{"type":"string","description":"Id."}}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "get-widget@1.2.0.input.json"), []byte(recorded), 0o644); err != nil {
		t.Fatal(err)
	}
	additive := `{"type":"object","additionalProperties":false,"required":["id"],"properties":{"id":{"type":"string","description":"Id."},"size":{"type":"integer","description":"Size."}}}` + "\n"
	breaking := `{"type":"object","additionalProperties":false,"required":["id","size"],"properties":{"id":{"type":"string","description":"Id."},"size":{"type":"integer","description":"Size."}}}` + "\n"
	docs := `{"type":"object","additionalProperties":false,"required":["id"],"properties":{"id":{"type":"string","description":"The widget's id."}}}` + "\n"
	cases := []struct {
		name, version, schema string
		wantMsg               string // substring; "" = accepted
		wantWrite             bool
	}{
		{"unchanged", "1.2.0", recorded, "", false},
		{"documentation under the same version", "1.2.0", docs, "documentation changed", true},
		{"additive under the same version", "1.2.0", additive, "1.3.0 or higher", false},
		{"breaking under the same version", "1.2.0", breaking, "2.0.0 or higher", false},
		{"additive with a patch bump", "1.2.1", additive, "must be 1.3.0 or higher", false},
		{"additive with a minor bump", "1.3.0", additive, "a new version", true},
		{"breaking with a minor bump", "1.3.0", breaking, "must be 2.0.0 or higher", false},
		{"breaking with a major bump", "2.0.0", breaking, "a new version", true},
		{"documentation with a patch bump", "1.2.1", docs, "a new version", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, write := judgeSchema(dir, "get-widget", tc.version, "input", []byte(tc.schema))
			if (tc.wantMsg == "") != (msg == "") || !strings.Contains(msg, tc.wantMsg) || write != tc.wantWrite {
				t.Fatalf("judge = %q, write %v; want %q, write %v", msg, write, tc.wantMsg, tc.wantWrite)
			}
		})
	}
}
