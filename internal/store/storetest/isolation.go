package storetest

import (
	"errors"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
)

// testTenantIsolation fills tenant "a" with one record of every kind and
// checks that tenant "b" can neither see nor change any of them, through
// every method.
func testTenantIsolation(t *testing.T, s store.Store) {
	ctx := t.Context()
	scopes := []store.Scope{{Layer: store.LayerUser, ScopeID: "u1"}, {Layer: store.LayerCompany, ScopeID: "shared"}}

	mem := newMemory("a", store.LayerUser, "u1", "tenant a secret about zeppelins", "secret")
	mustAdd(t, s, mem)
	ptr := &store.Memory{Tenant: "a", Layer: store.LayerCompany, ScopeID: "shared", Content: "zeppelin policy", KnowledgeItemID: "adr-1"}
	if _, err := s.UpsertPointer(ctx, ptr); err != nil {
		t.Fatalf("UpsertPointer: %v", err)
	}
	if err := s.RecordSyncRun(ctx, &store.SyncRun{Tenant: "a", Added: 3, DurationMs: 10}); err != nil {
		t.Fatalf("RecordSyncRun: %v", err)
	}
	if err := s.AppendItemVersion(ctx, &store.ItemVersion{Tenant: "a", ItemID: "adr-1", Change: store.ChangeAdded}); err != nil {
		t.Fatalf("AppendItemVersion: %v", err)
	}
	for range 3 {
		if err := s.AppendAudit(ctx, &store.AuditEvent{Tenant: "a", Tool: "memory_add", Decision: store.DecisionAllow}); err != nil {
			t.Fatalf("AppendAudit: %v", err)
		}
	}

	t.Run("GetMemory", func(t *testing.T) {
		if _, err := s.GetMemory(ctx, "b", mem.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("DeleteMemory", func(t *testing.T) {
		if err := s.DeleteMemory(ctx, "b", mem.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
		mustGet(t, s, "a", mem.ID)
	})
	t.Run("SearchMemories", func(t *testing.T) {
		for _, q := range []store.SearchQuery{
			{Tenant: "b", Terms: []string{"zeppelins", "zeppelin"}, Scopes: scopes, IncludeOrphaned: true},
			{Tenant: "b", Scopes: scopes, IncludeOrphaned: true},
			{Tenant: "b", Scopes: scopes, Tags: []string{"secret"}},
		} {
			if res := mustSearch(t, s, q); len(res.Candidates) != 0 || res.Matched != 0 {
				t.Errorf("search %+v = %+v, want nothing", q, res)
			}
		}
		// The same queries do find tenant a's rows, so the filter above is
		// tenant scoping and not a broken query.
		q := store.SearchQuery{Tenant: "a", Terms: []string{"zeppelins"}, Scopes: scopes}
		if res := mustSearch(t, s, q); res.Matched != 2 {
			t.Errorf("tenant a search matched %d, want 2", res.Matched)
		}
	})
	t.Run("CountMemories", func(t *testing.T) {
		mustCount(t, s, "b", 0)
		mustCount(t, s, "a", 2)
	})
	t.Run("Pointers", func(t *testing.T) {
		ps, err := s.ListPointers(ctx, "b")
		if err != nil || len(ps) != 0 {
			t.Errorf("ListPointers(b) = %v, %v; want none", ps, err)
		}
		n, err := s.MarkOrphaned(ctx, "b", []string{"adr-1"})
		if err != nil || n != 0 {
			t.Errorf("MarkOrphaned(b) = %d, %v; want 0", n, err)
		}
		// The same knowledge item in tenant b is a different pointer.
		bp := &store.Memory{Tenant: "b", Layer: store.LayerCompany, ScopeID: "shared", Content: "b's copy", KnowledgeItemID: "adr-1"}
		created, err := s.UpsertPointer(ctx, bp)
		if err != nil || !created {
			t.Fatalf("UpsertPointer(b) = %v, %v; want created", created, err)
		}
		if bp.ID == ptr.ID {
			t.Errorf("tenant b pointer reused tenant a's ID %s", ptr.ID)
		}
		got := mustGet(t, s, "a", ptr.ID)
		if got.Orphaned || got.Content != "zeppelin policy" {
			t.Errorf("tenant a pointer changed by tenant b: %+v", got)
		}
	})
	t.Run("Sync", func(t *testing.T) {
		st, err := s.SyncStats(ctx, "b")
		if err != nil || st.LastRun != nil || st.TotalSyncs != 0 || st.TotalItemsSynced != 0 {
			t.Errorf("SyncStats(b) = %+v, %v; want empty", st, err)
		}
		h, err := s.ItemHistory(ctx, "b", "adr-1")
		if err != nil || len(h) != 0 {
			t.Errorf("ItemHistory(b) = %+v, %v; want empty", h, err)
		}
		v := &store.ItemVersion{Tenant: "b", ItemID: "adr-1", Change: store.ChangeAdded}
		if err := s.AppendItemVersion(ctx, v); err != nil || v.Version != 1 {
			t.Errorf("AppendItemVersion(b) version = %d, %v; want 1", v.Version, err)
		}
	})
	t.Run("Audit", func(t *testing.T) {
		evs, next, err := s.ListAudit(ctx, store.AuditFilter{Tenant: "b"})
		if err != nil || len(evs) != 0 || next != "" {
			t.Errorf("ListAudit(b) = %v, %q, %v; want nothing", evs, next, err)
		}
		_, cursor, err := s.ListAudit(ctx, store.AuditFilter{Tenant: "a", Limit: 1})
		if err != nil || cursor == "" {
			t.Fatalf("ListAudit(a) cursor = %q, %v", cursor, err)
		}
		if _, _, err := s.ListAudit(ctx, store.AuditFilter{Tenant: "b", Cursor: cursor}); !errors.Is(err, store.ErrInvalidCursor) {
			t.Errorf("tenant a's cursor in tenant b: err = %v, want ErrInvalidCursor", err)
		}
	})
}
