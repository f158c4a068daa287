package postgres_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
)

// TestMigrationUnownsOldSessionAndAgentScopes builds a schema as migration
// 0001 left it, with session and agent memories scoped by the bare id a
// client sent, and checks that opening it gives them an empty owner (so
// the bare id a client sends no longer reaches them) while other layers
// keep their scope.
func TestMigrationUnownsOldSessionAndAgentScopes(t *testing.T) {
	cfg := freshSchema(t)
	conn, err := pgx.ConnectConfig(t.Context(), cfg.ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	initSQL, err := os.ReadFile(filepath.Join("migrations", "0001_init.sql"))
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct{ id, layer, scope string }{
		{"m-session", "session", "sess-777"},
		{"m-agent", "agent", "claude"},
		{"m-user", "user", "u1"},
	}
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
		string(initSQL),
		`INSERT INTO schema_migrations (version, name) VALUES (1, '0001_init.sql')`,
	} {
		if _, err := conn.Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows {
		if _, err := conn.Exec(t.Context(), `INSERT INTO memories (tenant, id, layer, scope_id, content, source_type, created_at, updated_at)
			VALUES ('acme', $1, $2, $3, 'shared secret plans', 'manual', now(), now())`, r.id, r.layer, r.scope); err != nil {
			t.Fatal(err)
		}
	}

	s := openConfig(t, cfg)
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
