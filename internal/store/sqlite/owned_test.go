package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
)

// TestMigrationUnownsOldSessionAndAgentScopes builds a database as
// migrations 0001-0004 left it, with session and agent memories scoped by
// the bare id a client sent, and checks that opening it gives them an
// empty owner (so the bare id a client sends no longer reaches them) while
// other layers keep their scope.
func TestMigrationUnownsOldSessionAndAgentScopes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db := rawDB(t, path)
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for v, name := range []string{"0001_init.sql", "0002_fts_scope.sql", "0003_descending_seq.sql", "0004_audit_subject_index.sql"} {
		sql, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(sql)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := db.Exec(`INSERT INTO schema_migrations VALUES (?, ?, 0)`, v+1, name); err != nil {
			t.Fatal(err)
		}
	}
	rows := []struct{ id, layer, scope string }{
		{"m-session", "session", "sess-777"},
		{"m-agent", "agent", "claude"},
		{"m-user", "user", "u1"},
	}
	for i, r := range rows {
		if _, err := db.Exec(`INSERT INTO memories (seq, tenant, id, layer, scope_id, content, source_type, created_at, updated_at)
			VALUES (?, 'acme', ?, ?, ?, 'shared secret plans', 'manual', 1, 1)`, -1-i, r.id, r.layer, r.scope); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, path)
	for _, r := range rows {
		m, err := s.GetMemory(t.Context(), "acme", r.id)
		if err != nil {
			t.Fatal(err)
		}
		want := r.scope
		if r.layer != "user" {
			want = "\x1f" + r.scope
		}
		if m.ScopeID != want {
			t.Errorf("%s: scope %q, want %q", r.id, m.ScopeID, want)
		}
		res, err := s.SearchMemories(t.Context(), store.SearchQuery{Tenant: "acme", Terms: []string{"secret"},
			Scopes: []store.Scope{{Layer: store.Layer(r.layer), ScopeID: r.scope}}, CandidateLimit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if wantN := map[bool]int{true: 1, false: 0}[r.layer == "user"]; len(res.Candidates) != wantN {
			t.Errorf("%s: a search of the bare scope %q found %d, want %d", r.id, r.scope, len(res.Candidates), wantN)
		}
	}
}
