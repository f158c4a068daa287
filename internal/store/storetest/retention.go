package storetest

import (
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

// testAuditRetention prunes in bounded batches, oldest first, only events
// older than the cutoff, and never those of a later, newer cutoff.
func testAuditRetention(t *testing.T, s store.Store) {
	p, ok := s.(store.AuditPruner)
	if !ok {
		t.Fatal("the store does not implement store.AuditPruner")
	}
	for _, tenant := range []string{"t1", "t2"} {
		seedAudit(t, s, tenant) // minutes 0, 1, 2, 3, 4, 5, 5 in each tenant
	}
	count := func(tenant string) int {
		t.Helper()
		es, _, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: tenant, Limit: store.MaxAuditLimit})
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	cut := auditT0.Add(3 * time.Minute) // before it: minutes 0, 1, 2 of both tenants, 6 events
	n, err := p.PruneAudit(t.Context(), cut, 4)
	if err != nil || n != 4 {
		t.Fatalf("PruneAudit(limit 4) = %d, %v; want 4 deleted", n, err)
	}
	n, err = store.PruneAuditOnce(t.Context(), p, cut)
	if err != nil || n != 2 {
		t.Fatalf("PruneAuditOnce = %d, %v; want the 2 left before the cutoff", n, err)
	}
	for _, tenant := range []string{"t1", "t2"} {
		if got := count(tenant); got != 4 {
			t.Errorf("tenant %s keeps %d events, want the 4 from minute 3 on", tenant, got)
		}
		es, _, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: tenant, Until: cut})
		if err != nil || len(es) != 0 {
			t.Errorf("tenant %s: %d events before the cutoff remain (%v)", tenant, len(es), err)
		}
	}
	// An older cutoff deletes nothing more; a pass with nothing to prune
	// is no error.
	if n, err := p.PruneAudit(t.Context(), auditT0, 100); err != nil || n != 0 {
		t.Errorf("PruneAudit(older cutoff) = %d, %v; want 0, nil", n, err)
	}
	// Events appended after a prune, even with an old timestamp, are
	// pruned by the next pass that covers them.
	if err := s.AppendAudit(t.Context(), &store.AuditEvent{At: auditT0, Tenant: "t1", Tool: "late", Decision: store.DecisionAllow}); err != nil {
		t.Fatal(err)
	}
	if n, err := store.PruneAuditOnce(t.Context(), p, cut); err != nil || n != 1 {
		t.Errorf("PruneAuditOnce after a late event = %d, %v; want 1", n, err)
	}
	if got := count("t1"); got != 4 {
		t.Errorf("tenant t1 keeps %d events, want 4", got)
	}
}
