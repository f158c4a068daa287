package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCallDrawings keeps docs/ARCHITECTURE.md's "Three calls, file by
// file" true where a test can: every Go file its lists name exists, and
// the folder it lies in is a package of the module (so a file moved to
// another package, or removed, fails here until the drawing follows).
func TestCallDrawings(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- calls -->")
	calls, _, ok2 := strings.Cut(rest, "<!-- /calls -->")
	if !ok || !ok2 {
		t.Fatal("docs/ARCHITECTURE.md: the call drawings' markers are missing")
	}
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, dir := range strings.Fields(string(out)) {
		if rel, err := filepath.Rel(abs, dir); err == nil {
			pkgs = append(pkgs, filepath.ToSlash(rel))
		}
	}
	files := regexp.MustCompile("`((?:internal|gen|cmd)/[^`]+\\.go)`").FindAllStringSubmatch(calls, -1)
	if len(files) < 20 {
		t.Fatalf("the call drawings name only %d files", len(files))
	}
	for _, f := range files {
		path := f[1]
		if _, err := os.Stat(filepath.Join(root, path)); err != nil {
			t.Errorf("the call drawings name %s, which does not exist", path)
			continue
		}
		if dir := filepath.ToSlash(filepath.Dir(path)); !slices.Contains(pkgs, dir) {
			t.Errorf("the call drawings name %s, but %s is no package of the module", path, dir)
		}
	}
}

// TestOneAdmission keeps the MCP transport's admission single: the era of
// a request is read (readModern) and its rules applied (checkRouting,
// errModernMeta) in the function admit alone, and both Streamable HTTP
// (post) and stdio (answer, which stdio's session calls) call that one
// admit. A second admission written beside it fails here.
func TestOneAdmission(t *testing.T) {
	dir := filepath.Join("..", "..", "mcpbridge")
	fset := token.NewFileSet()
	uses := map[string][]string{} // name → "file:func" of each use
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				var name string
				switch n := n.(type) {
				case *ast.CallExpr:
					switch fun := n.Fun.(type) {
					case *ast.Ident:
						name = fun.Name
					case *ast.SelectorExpr:
						name = fun.Sel.Name
					}
				case *ast.Ident:
					if n.Name == "errModernMeta" {
						name = n.Name
					}
				}
				if name != "" {
					rel, _ := filepath.Rel(dir, path)
					uses[name] = append(uses[name], filepath.ToSlash(rel)+":"+fn.Name.Name)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"readModern", "checkRouting", "errModernMeta"} {
		if got := slices.Compact(slices.Sorted(slices.Values(uses[name]))); !slices.Equal(got, []string{"revision.go:admit"}) {
			t.Errorf("%s is used in %q: the admission of a request must stay in admit (revision.go) alone", name, got)
		}
	}
	if got := slices.Compact(slices.Sorted(slices.Values(uses["admit"]))); !slices.Equal(got, []string{"dispatch.go:answer", "http.go:post"}) {
		t.Errorf("admit is called from %q, want Streamable HTTP's post and answer (stdio's and batches') only", got)
	}
	if got := uses["answer"]; !slices.Contains(got, "stdioconn.go:Answer") {
		t.Errorf("stdio's session does not answer through answer (and so admit): answer is called from %q", got)
	}
}

// TestMCPCallCount keeps the MCP drawing's count true: the crossings it
// states are its stops less one, and a function of the bridge it names
// at a stop of the bridge (the `name` after the file's path) is declared
// or called in that file, so that a helper moved to another file fails
// here until the drawing follows.
func TestMCPCallCount(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "**MCP `tools/call`")
	list, _, ok := strings.Cut(rest, "**REST**")
	if !ok {
		t.Fatal("docs/ARCHITECTURE.md: the MCP drawing is missing")
	}
	steps := regexp.MustCompile(`(?m)^(\d+)\. (.*)$`).FindAllStringSubmatch(list, -1)
	stated := regexp.MustCompile(`(?m)^(\d+) crossings`).FindStringSubmatch(list)
	if len(steps) == 0 || stated == nil {
		t.Fatal("the MCP drawing has no numbered stops or no count of its crossings")
	}
	if want := strconv.Itoa(len(steps) - 1); stated[1] != want {
		t.Errorf("the MCP drawing states %s crossings for %d stops: want %s", stated[1], len(steps), want)
	}
	// named collects the functions a file declares and the names it calls.
	named := func(path string) (declared, called map[string]bool) {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		declared, called = map[string]bool{}, map[string]bool{}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				declared[fn.Name.Name] = true
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				switch fun := c.Fun.(type) {
				case *ast.Ident:
					called[fun.Name] = true
				case *ast.SelectorExpr:
					called[fun.Sel.Name] = true
				}
			}
			return true
		})
		return declared, called
	}
	bridge := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(root, "internal", "mcpbridge", "*.go"))
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			d, _ := named(f)
			for n := range d {
				bridge[n] = true
			}
		}
	}
	placed := regexp.MustCompile("^`(internal/mcpbridge/[a-z]+\\.go)` — (.*)")
	names := regexp.MustCompile("`([a-zA-Z]+)`")
	for _, s := range steps {
		m := placed.FindStringSubmatch(s[2])
		if m == nil {
			continue
		}
		declared, called := named(filepath.Join(root, m[1]))
		for _, n := range names.FindAllStringSubmatch(m[2], -1) {
			if bridge[n[1]] && !declared[n[1]] && !called[n[1]] {
				t.Errorf("stop %s names %s at %s, which neither declares nor calls it", s[1], n[1], m[1])
			}
		}
	}
}
