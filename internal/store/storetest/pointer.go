package storetest

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

func newPointer(tenant, itemID, content, hash string, tags ...string) *store.Memory {
	return &store.Memory{Tenant: tenant, Layer: store.LayerOrg, ScopeID: "o1", Content: content,
		KnowledgeItemID: itemID, ContentHash: hash, Tags: tags}
}

func mustUpsert(tb testing.TB, s store.Store, m *store.Memory, wantCreated bool) {
	tb.Helper()
	created, err := s.UpsertPointer(tb.Context(), m)
	if err != nil {
		tb.Fatalf("UpsertPointer(%s): %v", m.KnowledgeItemID, err)
	}
	if created != wantCreated {
		tb.Fatalf("UpsertPointer(%s) created = %v, want %v", m.KnowledgeItemID, created, wantCreated)
	}
}

func testPointers(t *testing.T, s store.Store) {
	ctx := t.Context()
	orgScope := []store.Scope{{Layer: store.LayerOrg, ScopeID: "o1"}}

	k2 := newPointer("t1", "k2", "adr two: use gRPC between services", "h2")
	k1 := newPointer("t1", "k1", "adr one: prefer postgres for relational data", "h1", "database")
	mustUpsert(t, s, k2, true)
	mustUpsert(t, s, k1, true)
	plain := newMemory("t1", store.LayerOrg, "o1", "a plain org memory about postgres")
	mustAdd(t, s, plain)
	if !memoryIDPattern.MatchString(k1.ID) || k1.SourceType != store.SourceKnowledgeSync {
		t.Errorf("new pointer ID %q, SourceType %q", k1.ID, k1.SourceType)
	}
	stored := mustGet(t, s, "t1", k1.ID)
	if !reflect.DeepEqual(stored, *k1) {
		t.Errorf("GetMemory(pointer) =\n%+v\nwant\n%+v", stored, *k1)
	}

	t.Run("list is ordered and excludes plain memories", func(t *testing.T) {
		ps, err := s.ListPointers(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.KnowledgeItemID)
		}
		if !slices.Equal(got, []string{"k1", "k2"}) {
			t.Errorf("ListPointers items = %v, want [k1 k2]", got)
		}
	})

	time.Sleep(2 * time.Millisecond)
	t.Run("update keeps ID and CreatedAt", func(t *testing.T) {
		upd := newPointer("t1", "k1", "adr one, revised: prefer cockroach for relational data", "h1b", "storage")
		mustUpsert(t, s, upd, false)
		if upd.ID != k1.ID || !upd.CreatedAt.Equal(k1.CreatedAt) {
			t.Errorf("update changed identity: ID %s→%s CreatedAt %v→%v", k1.ID, upd.ID, k1.CreatedAt, upd.CreatedAt)
		}
		if !upd.UpdatedAt.After(k1.UpdatedAt) {
			t.Errorf("UpdatedAt %v not after %v", upd.UpdatedAt, k1.UpdatedAt)
		}
		got := mustGet(t, s, "t1", k1.ID)
		if !reflect.DeepEqual(got, *upd) {
			t.Errorf("GetMemory after update =\n%+v\nwant\n%+v", got, *upd)
		}
		// The full-text index and tags follow the new content.
		if res := mustSearch(t, s, store.SearchQuery{Tenant: "t1", Terms: []string{"cockroach"}, Scopes: orgScope}); !slices.Equal(ids(res), []string{k1.ID}) {
			t.Errorf("new content not searchable: %v", ids(res))
		}
		res := mustSearch(t, s, store.SearchQuery{Tenant: "t1", Terms: []string{"postgres"}, Scopes: orgScope})
		if !slices.Equal(ids(res), []string{plain.ID}) {
			t.Errorf("old content still searchable: %v, want only the plain memory", ids(res))
		}
		if res := mustSearch(t, s, store.SearchQuery{Tenant: "t1", Tags: []string{"database"}, Scopes: orgScope}); len(res.Candidates) != 0 {
			t.Errorf("old tag still matches: %v", ids(res))
		}
		if res := mustSearch(t, s, store.SearchQuery{Tenant: "t1", Tags: []string{"storage"}, Scopes: orgScope}); !slices.Equal(ids(res), []string{k1.ID}) {
			t.Errorf("new tag does not match: %v", ids(res))
		}
		mustCount(t, s, "t1", 3)
	})

	t.Run("orphan and re-upsert", func(t *testing.T) {
		n, err := s.MarkOrphaned(ctx, "t1", []string{"k1", "missing"})
		if err != nil || n != 1 {
			t.Fatalf("MarkOrphaned = %d, %v; want 1", n, err)
		}
		if n, err := s.MarkOrphaned(ctx, "t1", []string{"k1"}); err != nil || n != 0 {
			t.Errorf("second MarkOrphaned = %d, %v; want 0", n, err)
		}
		if n, err := s.MarkOrphaned(ctx, "t1", nil); err != nil || n != 0 {
			t.Errorf("MarkOrphaned(nil) = %d, %v; want 0", n, err)
		}
		if !mustGet(t, s, "t1", k1.ID).Orphaned || mustGet(t, s, "t1", k2.ID).Orphaned {
			t.Errorf("orphan flags wrong after MarkOrphaned(k1)")
		}
		q := store.SearchQuery{Tenant: "t1", Terms: []string{"adr"}, Scopes: orgScope}
		if res := mustSearch(t, s, q); !slices.Equal(ids(res), []string{k2.ID}) {
			t.Errorf("search without orphans = %v, want [%s]", ids(res), k2.ID)
		}
		q.IncludeOrphaned = true
		if res := mustSearch(t, s, q); len(res.Candidates) != 2 {
			t.Errorf("search with orphans = %v, want both pointers", ids(res))
		}
		ps, err := s.ListPointers(ctx, "t1")
		if err != nil || len(ps) != 2 || !ps[0].Orphaned {
			t.Errorf("ListPointers = %+v, %v; want k1 orphaned and listed", ps, err)
		}

		again := newPointer("t1", "k1", "adr one is back", "h1c")
		mustUpsert(t, s, again, false)
		if again.ID != k1.ID || again.Orphaned || mustGet(t, s, "t1", k1.ID).Orphaned {
			t.Errorf("re-upsert did not restore the pointer: %+v", again)
		}
	})

	t.Run("validation", func(t *testing.T) {
		_, err := s.UpsertPointer(ctx, newPointer("t1", "", "no item id", "h"))
		wantInvalid(t, err, "KnowledgeItemID")
		_, err = s.UpsertPointer(ctx, newPointer("", "k9", "no tenant", "h"))
		wantInvalid(t, err, "Tenant")
	})
}
