package layering

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/toolsvc/toolsvc/"

// rule forbids packages matching From to depend on packages matching To:
// directly, or through any chain of imports when Transitive is set.
// Except lists importers the rule does not apply to.
type rule struct {
	Name       string
	From, To   []string
	Except     []string
	Transitive bool
}

// The folders of internal/, from the edge inwards (docs/ARCHITECTURE.md):
// the transports (mcpbridge, rest), the door (interceptors: the chain;
// rpc: the in-process channel and the tool service), the tools, the
// contract packages, the stores and the libraries (base); server wires
// them and tests holds the whole-service suites and, in tests/support,
// test support.
var (
	transports = []string{"internal/mcpbridge", "internal/rest"}
	door       = []string{"internal/interceptors", "internal/rpc"}
	wiring     = []string{"internal/server"}
	testOnly   = []string{"internal/tests/support", "internal/tests"}
)

func join(groups ...[]string) []string { return slices.Concat(groups...) }

// rules are the layers of docs/ARCHITECTURE.md.
var rules = []rule{
	{Name: "transports never reach a store, directly or through any import (the chain's vocabulary is internal/contract/wire)",
		From: transports, To: []string{"internal/store"}, Transitive: true},
	{Name: "the door never depends on a transport, a tool or the wiring",
		From: door, To: join(transports, wiring, []string{"internal/tools"}), Transitive: true},
	{Name: "tools never depend on the door, the transports or the wiring",
		From: []string{"internal/tools"}, To: join(door, transports, wiring), Transitive: true},
	{Name: "the contract packages depend on no other layer",
		From: []string{"internal/contract"}, To: join(transports, door, wiring, []string{"internal/tools", "internal/store"}), Transitive: true},
	{Name: "the facts of a call are a leaf",
		From: []string{"internal/contract/callctx"}, To: []string{"internal/", "gen/"}, Transitive: true},
	{Name: "stores and libraries never depend on a layer above them",
		From: []string{"internal/store", "internal/base"}, To: join(transports, door, wiring, []string{"internal/tools", "internal/contract"}), Transitive: true},
	{Name: "identity (auth) depends on libraries only: the transports and the chain both import it",
		From: []string{"internal/auth"}, To: join(transports, door, wiring, []string{"internal/tools", "internal/store", "internal/contract"}), Transitive: true},
	{Name: "libraries are below the stores: a library that needs a store's types belongs to the layer that uses it",
		From: []string{"internal/base"}, To: []string{"internal/store"}, Transitive: true},
	{Name: "only server and cmd wire things together",
		From: []string{"internal/", "cmd/"}, To: wiring,
		// The test harness starts the real server, as cmd does.
		Except: join([]string{"cmd/"}, wiring, testOnly)},
	{Name: "the public client imports nothing of internal/ (its importers could not build it)",
		From: []string{"client"}, To: []string{"internal/"}, Transitive: true},
	{Name: "product code never imports test support",
		From: []string{"internal/", "cmd/"}, To: testOnly, Except: testOnly},
}

// graph maps a package (relative to the module) to its direct imports
// within the module.
type graph map[string][]string

func matches(pkg string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool {
		return pkg == p || pkg == strings.TrimSuffix(p, "/") || strings.HasPrefix(pkg, strings.TrimSuffix(p, "/")+"/")
	})
}

// violations returns one line per broken rule: which package reaches which
// forbidden one, and through what.
func violations(g graph, rules []rule) []string {
	var out []string
	for _, r := range rules {
		for pkg := range g {
			if !matches(pkg, r.From) || matches(pkg, r.Except) {
				continue
			}
			seen := map[string]bool{pkg: true}
			type step struct{ pkg, path string }
			queue := []step{{pkg, pkg}}
			for len(queue) > 0 {
				s := queue[0]
				queue = queue[1:]
				for _, imp := range g[s.pkg] {
					if seen[imp] {
						continue
					}
					seen[imp] = true
					path := s.path + " → " + imp
					if matches(imp, r.To) && !matches(imp, []string{pkg}) { // a package may use its own subpackages
						out = append(out, fmt.Sprintf("%s: %s", r.Name, path))
						continue
					}
					if r.Transitive {
						queue = append(queue, step{imp, path})
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestViolationsFindsBrokenRules(t *testing.T) {
	tests := []struct {
		name string
		g    graph
		want int
	}{
		{"clean", graph{"internal/tools/memory": {"internal/store", "internal/contract/callctx"}, "internal/store": nil, "internal/contract/callctx": nil}, 0},
		{"a tool imports the chain", graph{"internal/tools/memory": {"internal/interceptors"}, "internal/interceptors": nil}, 1},
		{"a tool reaches the chain through a helper", graph{"internal/tools/knowledgesync": {"internal/base/helper"}, "internal/base/helper": {"internal/interceptors"}}, 2},
		{"a transport imports a store", graph{"internal/rest/gateway": {"internal/store/sqlite"}}, 1},
		{"a transport reaches a store through the chain", graph{"internal/rest/gateway": {"internal/interceptors"}, "internal/interceptors": {"internal/store"}}, 1},
		{"a transport names headers through the contract", graph{"internal/mcpbridge": {"internal/contract/wire"}, "internal/contract/wire": nil}, 0},
		{"the leaf imports toolsvc", graph{"internal/contract/callctx": {"internal/base/redact"}}, 1},
		{"a contract package imports a tool", graph{"internal/contract/registry": {"internal/tools/memory"}}, 1},
		{"the chain imports a transport", graph{"internal/rpc/toolservice": {"internal/mcpbridge"}}, 1},
		{"a store imports the chain", graph{"internal/store/sqlite": {"internal/interceptors"}}, 1},
		{"the audit writer imports the chain", graph{"internal/store/auditlog": {"internal/interceptors"}}, 1},
		{"identity imports a store", graph{"internal/auth": {"internal/store/budget"}}, 1},
		{"a tool package wires the server", graph{"internal/contract/registry": {"internal/server"}}, 2},
		{"the harness may start the server", graph{"internal/tests/support/testserver": {"internal/server"}}, 0},
		{"a library imports a store", graph{"internal/base/vecindex": {"internal/store"}}, 1},
		{"product code imports test support", graph{"internal/store/postgres": {"internal/tests/support/testenv"}}, 1},
		{"the public client imports an internal package", graph{"client": {"internal/contract/toolerr"}}, 1},
		{"the public client uses the generated code", graph{"client": {"gen/go/toolsvc/v1"}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := violations(tc.g, rules); len(got) != tc.want {
				t.Fatalf("violations = %q, want %d", got, tc.want)
			}
		})
	}
}

// TestLayers checks the module's real import graph (non-test imports, as
// `go list` reports them) against the rules.
func TestLayers(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", mod+"...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := graph{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], mod) {
			continue
		}
		pkg := strings.TrimPrefix(f[0], mod)
		g[pkg] = nil
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, mod) {
				g[pkg] = append(g[pkg], strings.TrimPrefix(imp, mod))
			}
		}
	}
	if len(g) < 20 {
		t.Fatalf("go list found only %d packages of the module", len(g))
	}
	for _, v := range violations(g, rules) {
		t.Error(v)
	}
}

// TestPackageTable keeps docs/ARCHITECTURE.md's package table equal to
// the module's packages under internal/: a package added, moved or removed
// without the table fails here, and so does a row naming no package.
func TestPackageTable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- packages:")
	table, _, ok2 := strings.Cut(rest, "<!-- /packages -->")
	if !ok || !ok2 {
		t.Fatal("docs/ARCHITECTURE.md: the package table's markers are missing")
	}
	row := regexp.MustCompile("(?m)^\\| `(internal/[^`]+)` \\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		documented = append(documented, m[1])
	}
	cmd := exec.Command("go", "list", mod+"internal/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var actual []string
	for _, p := range strings.Fields(string(out)) {
		actual = append(actual, strings.TrimPrefix(p, mod))
	}
	if missing, extra := difference(actual, documented), difference(documented, actual); len(missing)+len(extra) > 0 {
		t.Errorf("docs/ARCHITECTURE.md's package table differs from the module:\n  packages not in the table: %q\n  rows naming no package: %q", missing, extra)
	}
}

// difference returns the elements of a not in b.
func difference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
