package layering

import (
	"bytes"
	"fmt"
	"os/exec"
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

// rules are the layers of docs/ARCHITECTURE.md.
var rules = []rule{
	{Name: "tools never depend on the chain, the transports or the wiring",
		From: []string{"internal/tools/"}, To: []string{"internal/interceptors", "internal/mcpbridge", "internal/gateway", "internal/console", "internal/server", "internal/toolservice", "internal/inproc"},
		Transitive: true},
	{Name: "transports never import a store",
		From: []string{"internal/mcpbridge", "internal/gateway", "internal/console"}, To: []string{"internal/store"}},
	{Name: "the facts of a call are a leaf",
		From: []string{"internal/callctx"}, To: []string{"internal/", "gen/"}, Transitive: true},
	{Name: "the chain never depends on a transport or the wiring",
		From: []string{"internal/interceptors"}, To: []string{"internal/mcpbridge", "internal/gateway", "internal/console", "internal/server"}, Transitive: true},
	{Name: "only server and cmd wire things together",
		From: []string{"internal/", "cmd/"}, To: []string{"internal/server"},
		// The test harness starts the real server, as cmd does.
		Except: []string{"cmd/", "internal/server", "internal/testserver", "internal/e2e", "internal/reliability"}},
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
		{"clean", graph{"internal/tools/memory": {"internal/store", "internal/callctx"}, "internal/store": nil, "internal/callctx": nil}, 0},
		{"a tool imports the chain", graph{"internal/tools/memory": {"internal/interceptors"}, "internal/interceptors": nil}, 1},
		{"a tool reaches the chain through a helper", graph{"internal/tools/sync": {"internal/helper"}, "internal/helper": {"internal/interceptors"}}, 1},
		{"a transport imports a store", graph{"internal/gateway": {"internal/store/sqlite"}}, 1},
		{"a transport reaches a store through the chain (allowed)", graph{"internal/gateway": {"internal/interceptors"}, "internal/interceptors": {"internal/store"}}, 0},
		{"the leaf imports toolsvc", graph{"internal/callctx": {"internal/auth"}}, 1},
		{"a tool package wires the server", graph{"internal/registry": {"internal/server"}}, 1},
		{"the harness may start the server", graph{"internal/testserver": {"internal/server"}}, 0},
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
