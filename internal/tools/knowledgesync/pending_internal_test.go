package knowledgesync

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

// TestPendingChangesRemembered: get-sync-status walks the knowledge
// directory at most once per pendingFreshness per tenant and library; a
// new library (a reload) and the end of the freshness window see the disk
// again.
func TestPendingChangesRemembered(t *testing.T) {
	dir := t.TempDir()
	acme := filepath.Join(dir, kb.TenantsDir, "acme")
	if err := os.MkdirAll(acme, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string) {
		body := "---\nid: " + name + "\ntitle: " + name + "\nstatus: accepted\nlayer: company\n---\nText.\n"
		if err := os.WriteFile(filepath.Join(acme, name+".md"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	load := func() *kb.Library {
		lib, _, err := kb.LoadLibrary(dir, kb.LibraryOptions{Tenants: []string{"acme"}})
		if err != nil {
			t.Fatal(err)
		}
		return lib
	}
	write("adr-1")
	lib := load()
	var m pendingMemo
	count := func(lib *kb.Library) int {
		got, err := m.get(lib, "acme")
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	if n := count(lib); n != 0 {
		t.Fatalf("pending right after the load = %d, want 0", n)
	}
	write("adr-2")
	if n := count(lib); n != 0 {
		t.Fatalf("pending within the freshness window = %d, want the remembered 0", n)
	}
	if n := count(load()); n != 0 {
		t.Fatalf("pending of a new load = %d, want 0 (it read adr-2)", n)
	}
	write("adr-3")
	time.Sleep(pendingFreshness + 50*time.Millisecond)
	if n := count(m.lib); n != 1 {
		t.Fatalf("pending after the freshness window = %d, want 1 (adr-3)", n)
	}
}
