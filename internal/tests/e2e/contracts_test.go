package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/schema"
)

// bothUpstreamsFile writes an upstreams file naming the example gRPC
// upstream (tickets) and the example MCP server (deploys).
func bothUpstreamsFile(t *testing.T, ticketsAddr, deploysURL string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(ticketsToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DEPLOYS_TOKEN", deploysToken)
	body := fmt.Sprintf(`upstreams:
  - name: tickets
    address: %q
    tls: {mode: plaintext}
    credential: {bearer_file: token}
    timeout: 5s
    contracts: {reflection: true}
    identity: {plain_headers: true}
  - name: deploys
    mcp:
      url: %q
    credential: {bearer_env: DEPLOYS_TOKEN}
    timeout: 5s
    identity: {plain_headers: true}
`, ticketsAddr, deploysURL)
	path := filepath.Join(dir, "upstreams.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSchemasSayWhatTheValidatorRequires is the proof that a tool's
// published input schema and the chain's validation cannot drift apart,
// for every tool served (in-tree, the example gRPC upstream and the
// example MCP server): the minimal call a schema-following client makes
// (the schema's required fields, filled by schema.Minimal, nothing else)
// passes validation on the real chain, and the same call without any one
// required field is refused as INVALID_INPUT naming that field. A call
// that passes validation may still fail later (NOT_FOUND for a made-up
// id): only INVALID_INPUT counts as a refusal of the contract.
func TestSchemasSayWhatTheValidatorRequires(t *testing.T) {
	tk := startTickets(t, ticketsOpts{})
	dp := startDeploys(t)
	s, c := newUpstreamServer(t, bothUpstreamsFile(t, tk.addr, dp.url))
	tr := GRPC{S: s}

	sources := map[string]int{}
	for _, tool := range s.Registry().All() {
		sources[sourceKind(tool)]++
		t.Run(tool.Name+"@"+tool.Version, func(t *testing.T) {
			minimal, err := schema.Minimal(tool.InputSchema)
			if err != nil {
				t.Fatalf("no minimal call can be made from the schema: %v", err)
			}
			args := minimal.(map[string]any)
			out := call(t, tr, c.Full, tool.Name, args)
			if out.Code == "INVALID_INPUT" {
				raw, _ := json.Marshal(args)
				t.Fatalf("the schema's minimal call %s is refused: %v", raw, out.Error)
			}
			for _, field := range schema.Required(tool.InputSchema) {
				without := map[string]any{}
				for k, v := range args {
					if k != field {
						without[k] = v
					}
				}
				out := call(t, tr, c.Full, tool.Name, without)
				if out.Code != "INVALID_INPUT" {
					t.Errorf("without required %q: %s, want INVALID_INPUT", field, out.Code)
					continue
				}
				if fields := violationFields(out.Error); !slices.Contains(fields, field) {
					t.Errorf("without required %q: the refusal names %v, not the field", field, fields)
				}
			}
		})
	}
	for _, kind := range []string{"in-tree", "upstream gRPC", "upstream MCP"} {
		if sources[kind] == 0 {
			t.Errorf("no %s tool was checked (%v)", kind, sources)
		}
	}
}

func sourceKind(tool *registry.Tool) string {
	switch tool.Source {
	case "":
		return "in-tree"
	case "upstream deploys":
		return "upstream MCP"
	}
	return "upstream gRPC"
}

// violationFields lists the fields a ToolError's violations name.
func violationFields(e map[string]any) []string {
	var out []string
	vs, _ := e["fieldViolations"].([]any)
	for _, v := range vs {
		if m, ok := v.(map[string]any); ok {
			if f, ok := m["field"].(string); ok {
				out = append(out, f)
			}
		}
	}
	return out
}
