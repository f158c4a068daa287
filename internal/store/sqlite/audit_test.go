package sqlite_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
)

// TestAppendAuditsIDsMatchRows checks the ids AppendAudits assigns from its
// multi-row inserts: every event gets the id of its own row, for a batch
// that takes every chunk size, after rows already written one by one.
func TestAppendAuditsIDsMatchRows(t *testing.T) {
	s := openTemp(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	event := func(i int) *store.AuditEvent {
		return &store.AuditEvent{Tenant: "ids", Tool: "memory_add", Subject: "alice", Decision: store.DecisionAllow,
			Code: "OK", At: t0.Add(time.Duration(i) * time.Second), TraceID: fmt.Sprint("t", i)}
	}
	if err := s.AppendAudit(t.Context(), event(0)); err != nil {
		t.Fatal(err)
	}
	batch := make([]*store.AuditEvent, 0, 87) // 64 + 16 + 4 + 1 + 1 + 1
	for i := range cap(batch) {
		batch = append(batch, event(i+1))
	}
	if err := s.(store.AuditBatcher).AppendAudits(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "ids", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]string{}
	for _, e := range got {
		byID[e.ID] = e.TraceID
	}
	if len(byID) != len(batch)+1 {
		t.Fatalf("%d rows listed, want %d", len(byID), len(batch)+1)
	}
	for _, e := range batch {
		if byID[e.ID] != e.TraceID {
			t.Errorf("event %s has id %d, which is the row of %q", e.TraceID, e.ID, byID[e.ID])
		}
	}
}

// TestAuditBySubjectWalksTheTenantIndex checks the plans of ListAudit's
// queries since migration 0004 dropped the subject index and 0014 moved
// the indexes behind the writer: a list by subject (or decision) walks
// audit_by_tenant newest first and a list by tool audit_by_tool, neither
// scanning the table nor sorting it, so each stops after its page; the
// tail after the index mark is a rowid range of audit_events, and only the
// page (and that tail) is sorted.
func TestAuditBySubjectWalksTheTenantIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s := openAt(t, path)
	batch := make([]*store.AuditEvent, 0, 200)
	for i := range cap(batch) {
		batch = append(batch, &store.AuditEvent{Tenant: "plan", Tool: fmt.Sprint("tool-", i%5), Subject: fmt.Sprint("subject-", i%50),
			Decision: store.DecisionAllow, Code: "OK"})
	}
	if err := s.AppendAudits(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	tests := []struct {
		name   string
		filter store.AuditFilter
		search string
	}{
		{name: "subject", filter: store.AuditFilter{Tenant: "plan", Subject: "subject-7", Limit: 10}, search: "SEARCH x USING PRIMARY KEY (tenant=?"},
		{name: "subject and range", filter: store.AuditFilter{Tenant: "plan", Subject: "subject-7", Since: time.Unix(1, 0), Limit: 10}, search: "SEARCH x USING PRIMARY KEY (tenant=?"},
		{name: "decision", filter: store.AuditFilter{Tenant: "plan", Decision: store.DecisionDeny, Limit: 10}, search: "SEARCH x USING PRIMARY KEY (tenant=?"},
		{name: "tool and subject", filter: store.AuditFilter{Tenant: "plan", Tool: "tool-1", Subject: "subject-7", Limit: 10}, search: "SEARCH x USING PRIMARY KEY (tenant=? AND tool=?)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			query, args := sqlite.ListAuditQuery(tc.filter)
			rows, err := db.Query("EXPLAIN QUERY PLAN "+query, args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			got := strings.Join(plan, "; ")
			walk, _, _ := strings.Cut(got, "SCAN (subquery-1)")
			if !strings.Contains(walk, tc.search) || strings.Contains(walk, "TEMP B-TREE") ||
				!strings.Contains(got, "SEARCH e USING INTEGER PRIMARY KEY (rowid>?)") || strings.Contains(got, "SCAN e") {
				t.Fatalf("plan %q: want %q in order, without sorting, and the tail as a rowid range", got, tc.search)
			}
		})
	}
	// And the list still finds a subject's events.
	got, _, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "plan", Subject: "subject-7", Limit: 100})
	if err != nil || len(got) != 4 {
		t.Fatalf("subject-7: %d events, %v; want 4", len(got), err)
	}
}

// TestAuditIndexBehindTheWriter checks the indexes migration 0014 builds
// behind the writer: IndexAudit gives every appended event its entries and
// moves the mark, the entries and the mark refuse changes as the log does,
// and a prune deletes the entries of the events it deletes.
func TestAuditIndexBehindTheWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s := openAt(t, path)
	s.StopAuditIndexer()
	old := time.Now().Add(-48 * time.Hour)
	batch := make([]*store.AuditEvent, 0, 30)
	for i := range cap(batch) {
		at := time.Now()
		if i < 10 {
			at = old
		}
		batch = append(batch, &store.AuditEvent{At: at, Tenant: "ix", Tool: fmt.Sprint("tool-", i%3), Subject: "alice",
			Decision: store.DecisionAllow, Code: "OK"})
	}
	if err := s.AppendAudits(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	count := func(table string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if a, b := count("audit_by_tenant"), count("audit_by_tool"); a != 0 || b != 0 {
		t.Fatalf("entries before the indexer ran: %d, %d", a, b)
	}
	// The unindexed tail is listed all the same, by tool too.
	if got, _, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "ix", Tool: "tool-1", Limit: 100}); err != nil || len(got) != 10 {
		t.Fatalf("tool-1 before indexing: %d events, %v; want 10", len(got), err)
	}
	if n, err := s.IndexAudit(t.Context()); err != nil || n != 30 {
		t.Fatalf("IndexAudit = %d, %v; want 30", n, err)
	}
	if n, err := s.IndexAudit(t.Context()); err != nil || n != 0 {
		t.Fatalf("IndexAudit again = %d, %v; want 0", n, err)
	}
	var upto int64
	if err := db.QueryRow(`SELECT upto FROM audit_indexed`).Scan(&upto); err != nil || upto != batch[29].ID {
		t.Fatalf("mark = %d, %v; want %d", upto, err, batch[29].ID)
	}
	if a, b := count("audit_by_tenant"), count("audit_by_tool"); a != 30 || b != 30 {
		t.Fatalf("entries after the indexer ran: %d, %d; want 30, 30", a, b)
	}
	if got, _, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "ix", Tool: "tool-1", Limit: 100}); err != nil || len(got) != 10 {
		t.Fatalf("tool-1 after indexing: %d events, %v; want 10", len(got), err)
	}
	for _, stmt := range []string{`UPDATE audit_by_tenant SET at = 0`, `DELETE FROM audit_by_tenant`,
		`UPDATE audit_by_tool SET at = 0`, `DELETE FROM audit_by_tool`, `UPDATE audit_indexed SET upto = 0`, `DELETE FROM audit_indexed`} {
		if _, err := db.Exec(stmt); err == nil {
			t.Errorf("%s: accepted, want a refusal", stmt)
		}
	}
	if n, err := s.PruneAudit(t.Context(), time.Now().Add(-24*time.Hour), 100); err != nil || n != 10 {
		t.Fatalf("PruneAudit = %d, %v; want the 10 old events", n, err)
	}
	if a, b, e := count("audit_by_tenant"), count("audit_by_tool"), count("audit_events"); a != 20 || b != 20 || e != 20 {
		t.Fatalf("after the prune: %d, %d entries, %d events; want 20 of each", a, b, e)
	}
}
