package sqlite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
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
