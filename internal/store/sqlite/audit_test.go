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
// queries since migration 0004 dropped the subject index: a list by
// subject (or decision) walks audit_events_tenant newest first and a list
// by tool uses audit_events_tool, neither scanning the table nor sorting
// it, so each stops after its page.
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
		index  string
	}{
		{name: "subject", filter: store.AuditFilter{Tenant: "plan", Subject: "subject-7", Limit: 10}, index: "audit_events_tenant"},
		{name: "subject and range", filter: store.AuditFilter{Tenant: "plan", Subject: "subject-7", Since: time.Unix(1, 0), Limit: 10}, index: "audit_events_tenant"},
		{name: "decision", filter: store.AuditFilter{Tenant: "plan", Decision: store.DecisionDeny, Limit: 10}, index: "audit_events_tenant"},
		{name: "tool and subject", filter: store.AuditFilter{Tenant: "plan", Tool: "tool-1", Subject: "subject-7", Limit: 10}, index: "audit_events_tool"},
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
			if !strings.Contains(got, "USING INDEX "+tc.index) || strings.Contains(got, "TEMP B-TREE") {
				t.Fatalf("plan %q: want a walk of %s in order, without sorting", got, tc.index)
			}
		})
	}
	// And the list still finds a subject's events.
	got, _, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "plan", Subject: "subject-7", Limit: 100})
	if err != nil || len(got) != 4 {
		t.Fatalf("subject-7: %d events, %v; want 4", len(got), err)
	}
}
