package kb

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// examplesDir is the example knowledge set the product serves.
var examplesDir = filepath.Join("..", "..", "..", "..", "examples", "knowledge")

// platformShop is the viewer most tests look through: acme's platform
// team working on the shop project, which sees the seven original example
// items (not the payments team's pattern nor the reports project's spec).
var platformShop = &Viewer{OrgID: "acme-org", TeamID: "acme-platform", ProjectID: "acme-shop"}

// loadExamples loads the example library, fails on any load error, and
// returns the items of tenant acme that platformShop sees as a Set of
// their own.
func loadExamples(tb testing.TB) *Set {
	tb.Helper()
	lib, errs, err := LoadLibrary(examplesDir, LibraryOptions{CompanyWide: true})
	if err != nil {
		tb.Fatalf("LoadLibrary(%s): %v", examplesDir, err)
	}
	if len(errs) > 0 {
		tb.Fatalf("LoadLibrary(%s) load errors: %v", examplesDir, errs)
	}
	set, errs := NewSet(lib.For("acme").Visible(platformShop))
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	return set
}

// itemSource renders a valid knowledge file with the given extra
// front-matter lines, which override the default type, layer, title and
// status.
func itemSource(id string, frontMatter ...string) string {
	var b strings.Builder
	b.WriteString("---\nid: " + id + "\n")
	defaults := [][2]string{{"type", "policy"}, {"layer", "team"}, {"title", "Item " + id}, {"status", "accepted"}}
	for _, d := range defaults {
		overridden := slices.ContainsFunc(frontMatter, func(l string) bool { return strings.HasPrefix(l, d[0]+":") })
		if !overridden {
			fmt.Fprintf(&b, "%s: %s\n", d[0], d[1])
		}
	}
	for _, l := range frontMatter {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString("---\nBody of " + id + ".\n")
	return b.String()
}

// mustParse parses src and fails the test on error.
func mustParse(tb testing.TB, path, src string) *Item {
	tb.Helper()
	it, err := Parse(path, []byte(src))
	if err != nil {
		tb.Fatalf("Parse(%s): %v", path, err)
	}
	return it
}

// mustSet builds a Set and fails the test on any load error.
func mustSet(tb testing.TB, items ...*Item) *Set {
	tb.Helper()
	set, errs := NewSet(items)
	if len(errs) > 0 {
		tb.Fatalf("NewSet: %v", errs)
	}
	return set
}

// constraintItem is an accepted item with one constraint.
func constraintItem(tb testing.TB, id, op, target, pattern string, appliesTo ...string) *Item {
	tb.Helper()
	lines := []string{
		"constraints:",
		"  - operator: " + op,
		"    target: " + target,
		"    pattern: '" + strings.ReplaceAll(pattern, "'", "''") + "'",
	}
	if len(appliesTo) > 0 {
		lines = append(lines, "    appliesTo:")
		for _, g := range appliesTo {
			lines = append(lines, "      - '"+g+"'")
		}
	}
	return mustParse(tb, id+".md", itemSource(id, lines...))
}
