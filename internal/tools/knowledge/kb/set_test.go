package kb

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestLoadDirExamples(t *testing.T) {
	set := loadExamples(t)
	wantIDs := []string{
		"adr-017-mongodb-for-events",
		"adr-042-database-selection",
		"pat-013-api-naming",
		"pat-021-graceful-shutdown",
		"pol-007-structured-logging",
		"pol-012-no-plaintext-secrets",
		"spec-101-error-wrapping",
	}
	var ids []string
	for _, it := range set.All() {
		ids = append(ids, it.ID)
	}
	if !slices.Equal(ids, wantIDs) || set.Len() != len(wantIDs) {
		t.Fatalf("ids = %v (Len %d), want %v", ids, set.Len(), wantIDs)
	}
	adr, ok := set.Get("adr-042-database-selection")
	if !ok {
		t.Fatal("Get(adr-042-database-selection) not found")
	}
	if adr.Path != "tenants/acme/adrs/adr-042-database-selection.md" || adr.Owner != "acme-org" || adr.Layer != LayerOrg || adr.Status != StatusAccepted ||
		adr.Title != "Database Selection for New Services" ||
		adr.Summary != "Use PostgreSQL for all new services requiring relational data" ||
		!slices.Equal(adr.Tags, []string{"database", "infrastructure"}) || len(adr.Constraints) != 2 {
		t.Errorf("adr-042 loaded wrongly: %+v", adr)
	}
	if want := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC); !adr.CreatedAt.Equal(want) {
		t.Errorf("CreatedAt = %v, want %v", adr.CreatedAt, want)
	}
	old, _ := set.Get("adr-017-mongodb-for-events")
	if !slices.Equal(old.SupersededBy, []string{"adr-042-database-selection"}) || old.Status != StatusSuperseded {
		t.Errorf("adr-017 SupersededBy = %v, status %q", old.SupersededBy, old.Status)
	}
	if _, ok := set.Get("adr-999"); ok {
		t.Error("Get(adr-999) found an item")
	}
}

func TestLoadDirMalformed(t *testing.T) {
	set, errs, err := LoadDir(filepath.Join("testdata", "malformed"))
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	wantErrs := []LoadError{
		{Path: "nested/broken.md", Reason: `constraint 1: unknown operator "must_be"`},
		{Path: "nested/copy.md", Reason: `duplicate id "good-one" (first defined in good-one.md)`},
	}
	if !reflect.DeepEqual(errs, wantErrs) {
		t.Errorf("load errors = %+v, want %+v", errs, wantErrs)
	}
	if set.Len() != 2 {
		t.Fatalf("Len = %d, want 2 (good-one, good-two)", set.Len())
	}
	one, _ := set.Get("good-one")
	if one.Path != "good-one.md" {
		t.Errorf("good-one Path = %q", one.Path)
	}
	if !slices.Equal(one.SupersededBy, []string{"good-two"}) {
		t.Errorf("good-one SupersededBy = %v", one.SupersededBy)
	}
	two, _ := set.Get("good-two")
	if two.Path != "nested/good-two.md" {
		t.Errorf("good-two Path = %q", two.Path)
	}
}

func TestLoadDirDatesFallBackToModTime(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.md")
	if err := os.WriteFile(file, []byte(itemSource("a", "created: 2020-01-01")), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	if err := os.Chtimes(file, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	set, errs, err := LoadDir(dir)
	if err != nil || len(errs) > 0 {
		t.Fatalf("LoadDir: %v %v", errs, err)
	}
	it, _ := set.Get("a")
	if want := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC); !it.CreatedAt.Equal(want) {
		t.Errorf("CreatedAt = %v, want the front-matter date %v", it.CreatedAt, want)
	}
	if !it.UpdatedAt.Equal(mtime) {
		t.Errorf("UpdatedAt = %v, want the modification time %v", it.UpdatedAt, mtime)
	}
}

func TestLoadDirSymlinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "real.md"), []byte(itemSource("real")), 0o600); err != nil {
		t.Fatal(err)
	}
	// A link to a directory named like a knowledge file, and a link back to
	// the root: neither may be loaded or loop.
	for link, target := range map[string]string{"dir.md": t.TempDir(), "loop": dir} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Skipf("symlinks unsupported: %v", err)
		}
	}
	set, errs, err := LoadDir(dir)
	if err != nil || len(errs) != 0 || set.Len() != 1 {
		t.Errorf("LoadDir = Len %d, errs %v, err %v; want only real.md", set.Len(), errs, err)
	}
}

func TestLoadDirUnreadable(t *testing.T) {
	tests := []struct {
		name string
		dir  string
	}{
		{name: "missing", dir: filepath.Join(t.TempDir(), "nope")},
		{name: "a file", dir: filepath.Join("testdata", "malformed", "good-one.md")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, errs, err := LoadDir(tt.dir)
			if err == nil || set != nil || errs != nil {
				t.Errorf("LoadDir(%s) = %v, %v, %v; want only an error", tt.dir, set, errs, err)
			}
		})
	}
}

func TestLoadDirOversizedFile(t *testing.T) {
	dir := t.TempDir()
	big := itemSource("big") + string(make([]byte, MaxFileSize))
	if err := os.WriteFile(filepath.Join(dir, "big.md"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	set, errs, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("file is larger than %d bytes", MaxFileSize)
	if set.Len() != 0 || len(errs) != 1 || errs[0].Path != "big.md" || errs[0].Reason != want {
		t.Errorf("Len %d, errs %+v; want one error for big.md", set.Len(), errs)
	}
}

func TestNewSet(t *testing.T) {
	a := mustParse(t, "a.md", itemSource("a"))
	b := mustParse(t, "b.md", itemSource("b", "supersedes: a"))
	c := mustParse(t, "c.md", itemSource("c", "supersedes: a"))
	dupA := mustParse(t, "other/a.md", itemSource("a"))
	invalid := &Item{ID: "d", Type: "adr", Layer: "org", Title: "D", Status: "accepted", Path: "d.md",
		Constraints: []Constraint{{Operator: "must_use", Target: "dependency", Pattern: "("}}}
	set, errs := NewSet([]*Item{c, a, nil, dupA, b, invalid})
	want := []LoadError{
		{Path: "items[2]", Reason: "nil item"},
		{Path: "d.md", Reason: `constraint 1: invalid regex "(": missing closing )`},
		{Path: "other/a.md", Reason: `duplicate id "a" (first defined in a.md)`},
	}
	if !reflect.DeepEqual(errs, want) {
		t.Errorf("errs = %+v, want %+v", errs, want)
	}
	got, _ := set.Get("a")
	if got == a {
		t.Error("NewSet kept the caller's item instead of a copy")
	}
	if !slices.Equal(got.SupersededBy, []string{"b", "c"}) {
		t.Errorf("SupersededBy = %v, want [b c]", got.SupersededBy)
	}
	if a.SupersededBy != nil {
		t.Error("NewSet modified the caller's item")
	}

	// An item built by hand gets defaults, compiled rules and a hash.
	manual := &Item{ID: "m", Type: "spec", Layer: "project", Title: "M", Status: "accepted",
		Constraints: []Constraint{{Operator: "must_not_use", Target: "dependency", Pattern: "x"}}}
	set = mustSet(t, manual)
	m, _ := set.Get("m")
	if m.Severity != SeverityWarn || m.Constraints[0].Severity != SeverityWarn || len(m.Hash) != 64 {
		t.Errorf("manual item not completed: %+v", m)
	}
}
