package sqlite_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
)

var scopeU1 = store.Scope{Layer: store.LayerUser, ScopeID: "u1"}

// windowIDs returns the IDs of a text search for terms in u1 whose
// candidates are its whole window: every match in scope up to
// store.MatchedCap, the newest when there are more.
func windowIDs(t *testing.T, s store.Store, tags []string, terms ...string) []string {
	t.Helper()
	res, err := s.SearchMemories(t.Context(), store.SearchQuery{Tenant: "t1", Terms: terms, Tags: tags,
		Scopes: []store.Scope{scopeU1}, CandidateLimit: store.MaxCandidateLimit})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(res.Candidates))
	for i, c := range res.Candidates {
		out[i] = c.Memory.ID
	}
	slices.Sort(out)
	return out
}

// seqOrder returns the memory IDs of path's t1/u1 scope in ascending seq.
func seqOrder(t *testing.T, path string) []string {
	t.Helper()
	rows, err := rawDB(t, path).Query(`SELECT id FROM memories WHERE tenant = 't1' AND scope_id = 'u1' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// head is the start of a long list of IDs, for messages.
func head(ids []string) []string { return ids[:min(len(ids), 6)] }

// checkIntegrity checks the foreign keys and the full-text index of path
// against the memories table (checkTerms).
func checkIntegrity(t *testing.T, path string) {
	t.Helper()
	db := rawDB(t, path)
	rows, err := db.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	if rows.Next() {
		t.Error("PRAGMA foreign_key_check reports violations")
	}
	_ = rows.Close()
	if _, err := db.Exec(`INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		t.Errorf("full-text index corrupt: %v", err)
	}
	checkTerms(t, db)
}

// checkTerms checks that the full-text index holds, for every memory, its
// scoped terms (sqlite.MemoryTerms of its scope key and content) and no
// other rows: each term of the index is looked up and its rows compared
// with the memories that hold it. The index is contentless, so FTS5's own
// integrity check cannot compare it with the memories.
func checkTerms(t *testing.T, db *sql.DB) {
	t.Helper()
	want := map[string][]int64{}
	rows, err := db.Query(`SELECT seq, scope_key, content FROM memories ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var seq int64
		var key, content string
		if err := rows.Scan(&seq, &key, &content); err != nil {
			t.Fatal(err)
		}
		for _, term := range strings.Fields(sqlite.MemoryTerms(key, content)) {
			want[term] = append(want[term], seq)
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.terms USING fts5vocab(main, memories_fts, row)`); err != nil {
		t.Fatal(err)
	}
	var indexed []string
	rows, err = db.Query(`SELECT term FROM temp.terms`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var term string
		if err := rows.Scan(&term); err != nil {
			t.Fatal(err)
		}
		indexed = append(indexed, term)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	// A term whose rows were all deleted may stay in the vocabulary
	// until a merge; it must match no row.
	for term := range want {
		if !slices.Contains(indexed, term) {
			indexed = append(indexed, term)
		}
	}
	for _, term := range indexed {
		var got []int64
		rows, err := db.Query(`SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid`, `"`+term+`"`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var seq int64
			if err := rows.Scan(&seq); err != nil {
				t.Fatal(err)
			}
			got = append(got, seq)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[term]) {
			t.Errorf("term %q: index rows %v, memories %v", term, got, want[term])
		}
	}
}

// TestNewestFirstIsAscendingSeq checks that every insert path numbers new
// memories below the existing ones, and that a capped text search keeps
// the newest matches: those of a batch in slice order, then the later
// adds and pointers.
func TestNewestFirstIsAscendingSeq(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seq.db")
	s := openAt(t, path)
	batch := make([]*store.Memory, store.MatchedCap+5)
	for i := range batch {
		batch[i] = &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1",
			Content: fmt.Sprintf("alpha entry %d", i), Tags: []string{fmt.Sprint("tag", i%2)}}
	}
	if err := s.AddMemories(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	var later []*store.Memory
	for i := range 3 {
		m := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: fmt.Sprint("alpha later ", i)}
		if err := s.AddMemory(t.Context(), m); err != nil {
			t.Fatal(err)
		}
		later = append(later, m)
	}
	ptr := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: "alpha pointer",
		KnowledgeItemID: "k1", ContentHash: "h1"}
	if _, err := s.UpsertPointer(t.Context(), ptr); err != nil {
		t.Fatal(err)
	}

	all := append(append(slices.Clone(batch), later...), ptr)
	var want []string // newest first
	for i := len(all) - 1; i >= 0; i-- {
		want = append(want, all[i].ID)
	}
	if got := seqOrder(t, path); !slices.Equal(got, want) {
		t.Errorf("ascending seq is not newest first:\n got %v...\nwant %v...", head(got), head(want))
	}
	checkIntegrity(t, path)

	// The window is the newest MatchedCap: all but the batch's oldest 9.
	wantWindow := slices.Sorted(slices.Values(want[:store.MatchedCap]))
	if got := windowIDs(t, s, nil, "alpha"); !slices.Equal(got, wantWindow) {
		t.Errorf("window of a capped search: %d IDs, not the newest %d", len(got), store.MatchedCap)
	}
	// With a tag, fewer than MatchedCap match: all of them.
	var odd []string
	for i, m := range batch {
		if i%2 == 1 {
			odd = append(odd, m.ID)
		}
	}
	slices.Sort(odd)
	if got := windowIDs(t, s, []string{"tag1"}, "alpha"); !slices.Equal(got, odd) {
		t.Errorf("tag1 search: %d IDs, want the %d odd entries", len(got), len(odd))
	}
}

// TestMigrationReversesSeq builds a database as migrations 0001 and 0002
// left it, with ascending seqs, and checks that opening it renumbers the
// memories newest first with their tags, full-text entries and foreign
// keys intact, and that new memories come before them.
func TestMigrationReversesSeq(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db := rawDB(t, path)
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`PRAGMA foreign_keys = ON`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for v, name := range []string{"0001_init.sql", "0002_fts_scope.sql"} {
		sql, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(string(sql)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := tx.Exec(`INSERT INTO schema_migrations VALUES (?, ?, 0)`, v+1, name); err != nil {
			t.Fatal(err)
		}
	}
	// Old numbering: seq assigned by SQLite, ascending with age. The last
	// rows are in another scope and tenant, which the searches must not see.
	const n = store.MatchedCap + 5
	created := time.Now().Add(-time.Hour).UnixMicro()
	var old []string // oldest first
	for i := range n + 2 {
		tenant, scopeID := "t1", "u1"
		switch i {
		case n:
			scopeID = "u2"
		case n + 1:
			tenant = "t2"
		}
		id := fmt.Sprintf("old-%04d", i)
		res, err := tx.Exec(`INSERT INTO memories (tenant, id, layer, scope_id, content, tags, source_type, created_at, updated_at)
			VALUES (?, ?, 'user', ?, ?, ?, 'manual', ?, ?)`,
			tenant, id, scopeID, fmt.Sprintf("alpha entry %d", i), fmt.Sprintf(`["tag%d"]`, i%2), created+int64(i), created+int64(i))
		if err != nil {
			t.Fatal(err)
		}
		seq, err := res.LastInsertId()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO memory_tags (memory_seq, tenant, tag) VALUES (?, ?, ?)`, seq, tenant, fmt.Sprint("tag", i%2)); err != nil {
			t.Fatal(err)
		}
		if i < n {
			old = append(old, id)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, path)
	newestFirst := slices.Clone(old)
	slices.Reverse(newestFirst)
	if got := seqOrder(t, path); !slices.Equal(got, newestFirst) {
		t.Fatalf("after the migration, ascending seq is not newest first: %v...", head(got))
	}
	var minSeq, maxSeq, tags int
	if err := rawDB(t, path).QueryRow(`SELECT min(seq), max(seq), (SELECT count(*) FROM memory_tags) FROM memories`).Scan(&minSeq, &maxSeq, &tags); err != nil {
		t.Fatal(err)
	}
	if minSeq != -(n+2) || maxSeq != -1 || tags != n+2 {
		t.Errorf("seqs %d..%d and %d tag rows, want %d..-1 and %d", minSeq, maxSeq, tags, -(n + 2), n+2)
	}
	var automerge int
	if err := rawDB(t, path).QueryRow(`SELECT v FROM memories_fts_config WHERE k = 'automerge'`).Scan(&automerge); err != nil || automerge != 2 {
		t.Errorf("automerge after the rebuild: %d, %v; want 2 (migration 0002)", automerge, err)
	}
	checkIntegrity(t, path)

	if got, want := windowIDs(t, s, nil, "alpha"), slices.Sorted(slices.Values(newestFirst[:store.MatchedCap])); !slices.Equal(got, want) {
		t.Errorf("window of a capped search after the migration: %d IDs, not the newest %d", len(got), store.MatchedCap)
	}
	var odd []string
	for i, id := range old {
		if i%2 == 1 {
			odd = append(odd, id)
		}
	}
	if got := windowIDs(t, s, []string{"tag1"}, "alpha"); !slices.Equal(got, odd) {
		t.Errorf("tag1 search after the migration: %d IDs, want the %d odd entries", len(got), len(odd))
	}

	// New memories come first, and deleting a renumbered memory still
	// takes its tags (foreign key) and full-text entry (trigger).
	fresh := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: "alpha fresh", Tags: []string{"tag1"}}
	if err := s.AddMemory(t.Context(), fresh); err != nil {
		t.Fatal(err)
	}
	deleted := old[n-2] // the newest of tag1
	if err := s.DeleteMemory(t.Context(), "t1", deleted); err != nil {
		t.Fatal(err)
	}
	if got := seqOrder(t, path); !slices.Equal(head(got), append([]string{fresh.ID, old[n-1]}, newestFirst[2:6]...)) {
		t.Errorf("after an add and a delete, seq order starts %v", head(got))
	}
	want := append([]string{fresh.ID, old[n-1]}, newestFirst[2:store.MatchedCap]...)
	slices.Sort(want)
	if got := windowIDs(t, s, nil, "alpha"); !slices.Equal(got, want) {
		t.Errorf("window after an add and a delete: %d IDs, not the newest %d", len(got), store.MatchedCap)
	}
	want = append(slices.DeleteFunc(odd, func(id string) bool { return id == deleted }), fresh.ID)
	slices.Sort(want)
	if got := windowIDs(t, s, []string{"tag1"}, "alpha"); !slices.Equal(got, want) {
		t.Errorf("tag1 search after an add and a delete: %d IDs, want %d", len(got), len(want))
	}
	if err := rawDB(t, path).QueryRow(`SELECT count(*) FROM memory_tags`).Scan(&tags); err != nil {
		t.Fatal(err)
	}
	if tags != n+2 {
		t.Errorf("%d tag rows after an add and a delete, want %d", tags, n+2)
	}
	checkIntegrity(t, path)
}
