package kb

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func writeFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// TestPendingChanges: after a load, files added, modified and removed on
// disk are reported per tenant (another tenant's files never), a file
// only touched is not, and the digests tell content apart.
func TestPendingChanges(t *testing.T) {
	dir := t.TempDir()
	acme := filepath.Join(dir, TenantsDir, "acme")
	beta := filepath.Join(dir, TenantsDir, "beta")
	writeFile(t, filepath.Join(acme, "a.md"), itemSource("adr-a", "layer: company"))
	writeFile(t, filepath.Join(acme, "touched.md"), itemSource("adr-t", "layer: company"))
	writeFile(t, filepath.Join(acme, "broken.md"), "---\nnot front matter\n")
	writeFile(t, filepath.Join(beta, "b.md"), itemSource("adr-b", "layer: company"))
	lib, _, err := LoadLibrary(dir, LibraryOptions{Tenants: []string{"acme", "beta"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"acme", "beta", "gamma"} {
		if got, err := lib.PendingChanges(tenant); err != nil || len(got) != 0 {
			t.Fatalf("right after the load, %s: %v, %v; want none", tenant, got, err)
		}
	}

	writeFile(t, filepath.Join(acme, "a.md"), itemSource("adr-a", "layer: company", "title: Changed"))
	writeFile(t, filepath.Join(acme, "new", "c.md"), itemSource("adr-c", "layer: company"))
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(acme, "touched.md"), later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(beta, "b.md")); err != nil {
		t.Fatal(err)
	}
	want := map[string][]FileChange{
		"acme": {{Path: "tenants/acme/a.md", Change: FileModified}, {Path: "tenants/acme/new/c.md", Change: FileAdded}},
		"beta": {{Path: "tenants/beta/b.md", Change: FileRemoved}},
	}
	for tenant, w := range want {
		got, err := lib.PendingChanges(tenant)
		if err != nil || !slices.Equal(got, w) {
			t.Errorf("%s: pending changes %v, %v; want %v", tenant, got, err, w)
		}
	}

	again, _, err := LoadLibrary(dir, LibraryOptions{Tenants: []string{"acme", "beta"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := again.PendingChanges("acme"); len(got) != 0 {
		t.Errorf("after a reload: %v, want none", got)
	}
	if again.For("acme").Len() != 3 {
		t.Fatalf("reloaded acme has %d items, want 3", again.For("acme").Len())
	}
	if again.Digest() == lib.Digest() || again.For("acme").Digest() == lib.For("acme").Digest() {
		t.Errorf("digests did not change with the content")
	}
	same, _, err := LoadLibrary(dir, LibraryOptions{Tenants: []string{"acme", "beta"}})
	if err != nil {
		t.Fatal(err)
	}
	if same.Digest() != again.Digest() || same.For("acme").Digest() != again.For("acme").Digest() {
		t.Errorf("two loads of one directory have different digests")
	}
}

// TestPendingChangesSingleTenant: in the single-tenant layout every file
// is the tenant's.
func TestPendingChangesSingleTenant(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.md"), itemSource("adr-a"))
	lib, _, err := LoadLibrary(dir, LibraryOptions{Tenants: []string{"solo"}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub", "b.md"), itemSource("adr-b"))
	got, err := lib.PendingChanges("solo")
	if w := []FileChange{{Path: "sub/b.md", Change: FileAdded}}; err != nil || !slices.Equal(got, w) {
		t.Errorf("pending changes %v, %v; want %v", got, err, w)
	}
}
