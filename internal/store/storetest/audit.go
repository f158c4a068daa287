package storetest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

var auditT0 = time.Date(2025, 5, 1, 9, 0, 0, 0, time.UTC)

// seedAudit appends seven events, one minute apart except the last two,
// which share a timestamp, and returns them newest first (the order
// ListAudit must produce).
func seedAudit(tb testing.TB, s store.Store, tenant string) []store.AuditEvent {
	tb.Helper()
	specs := []struct {
		tool, subject, decision string
		minute                  int
	}{
		{"memory_add", "alice", store.DecisionAllow, 0},
		{"memory_search", "alice", store.DecisionAllow, 1},
		{"memory_add", "bob", store.DecisionDeny, 2},
		{"sync_now", "bob", store.DecisionError, 3},
		{"memory_add", "alice", store.DecisionAllow, 4},
		{"memory_search", "bob", store.DecisionAllow, 5},
		{"memory_delete", "alice", store.DecisionDeny, 5},
	}
	var out []store.AuditEvent
	for i, sp := range specs {
		e := store.AuditEvent{
			At: auditT0.Add(time.Duration(sp.minute) * time.Minute), Tool: sp.tool, ToolVersion: "v1",
			Subject: sp.subject, Tenant: tenant, TraceID: fmt.Sprint("trace-", i), CorrelationID: fmt.Sprint("corr-", i),
			Transport: "grpc", Decision: sp.decision, Reason: "because " + sp.decision, Code: "OK", LatencyMs: 1.25 * float64(i),
		}
		if err := s.AppendAudit(tb.Context(), &e); err != nil {
			tb.Fatalf("AppendAudit: %v", err)
		}
		if e.ID <= 0 {
			tb.Fatalf("AppendAudit left ID %d", e.ID)
		}
		out = append([]store.AuditEvent{e}, out...)
	}
	return out
}

func testAuditFilters(t *testing.T, s store.Store) {
	all := seedAudit(t, s, "t1")
	seedAudit(t, s, "t2")
	pick := func(idx ...int) []store.AuditEvent {
		out := []store.AuditEvent{}
		for _, i := range idx {
			out = append(out, all[i])
		}
		return out
	}
	// all[0] is the newest event (memory_delete, minute 5) and all[6] the oldest.
	tests := []struct {
		name   string
		filter store.AuditFilter
		want   []store.AuditEvent
	}{
		{name: "everything newest first", filter: store.AuditFilter{}, want: all},
		{name: "tool", filter: store.AuditFilter{Tool: "memory_add"}, want: pick(2, 4, 6)},
		{name: "subject", filter: store.AuditFilter{Subject: "bob"}, want: pick(1, 3, 4)},
		{name: "decision", filter: store.AuditFilter{Decision: store.DecisionDeny}, want: pick(0, 4)},
		{name: "since is inclusive", filter: store.AuditFilter{Since: auditT0.Add(4 * time.Minute)}, want: pick(0, 1, 2)},
		{name: "until is exclusive", filter: store.AuditFilter{Until: auditT0.Add(time.Minute)}, want: pick(6)},
		{name: "window", filter: store.AuditFilter{Since: auditT0.Add(time.Minute), Until: auditT0.Add(4 * time.Minute)}, want: pick(3, 4, 5)},
		{name: "combined", filter: store.AuditFilter{Tool: "memory_add", Subject: "alice", Decision: store.DecisionAllow}, want: pick(2, 6)},
		{name: "no match", filter: store.AuditFilter{Tool: "knowledge_check"}, want: []store.AuditEvent{}},
		{name: "since in another zone", filter: store.AuditFilter{Since: auditT0.Add(5 * time.Minute).In(time.FixedZone("X", -7*3600))}, want: pick(0, 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.filter
			f.Tenant = "t1"
			got, next, err := s.ListAudit(t.Context(), f)
			if err != nil {
				t.Fatalf("ListAudit: %v", err)
			}
			if next != "" {
				t.Errorf("next cursor %q on a single page", next)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ListAudit(%+v) =\n%+v\nwant\n%+v", f, got, tc.want)
			}
		})
	}
}

func testAuditPagination(t *testing.T, s store.Store) {
	all := seedAudit(t, s, "t1")
	for _, limit := range []int{1, 2, 3, 6, 7} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			var got []store.AuditEvent
			f := store.AuditFilter{Tenant: "t1", Limit: limit}
			for page := 0; ; page++ {
				if page > len(all) {
					t.Fatal("pagination does not end")
				}
				evs, next, err := s.ListAudit(t.Context(), f)
				if err != nil {
					t.Fatalf("page %d: %v", page, err)
				}
				if len(evs) > limit {
					t.Fatalf("page %d has %d events, limit %d", page, len(evs), limit)
				}
				got = append(got, evs...)
				if next == "" {
					break
				}
				f.Cursor = next
			}
			if !reflect.DeepEqual(got, all) {
				t.Errorf("pages joined =\n%+v\nwant\n%+v", got, all)
			}
		})
	}

	// A page boundary is stable while new events arrive: they are newer
	// and do not shift later pages.
	first, next, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "t1", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AppendAudit(t.Context(), &store.AuditEvent{Tenant: "t1", Tool: "late", Decision: store.DecisionAllow}); err != nil {
		t.Fatal(err)
	}
	second, _, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "t1", Limit: 3, Cursor: next})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(append(first, second...), all[:6]) {
		t.Errorf("pages shifted after an append")
	}
}

func testAuditDefaultLimit(t *testing.T, s store.Store) {
	for i := range store.DefaultAuditLimit + 1 {
		e := &store.AuditEvent{Tenant: "t1", Tool: "memory_add", Decision: store.DecisionAllow, At: auditT0.Add(time.Duration(i) * time.Second)}
		if err := s.AppendAudit(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{0, -3} {
		evs, next, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "t1", Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != store.DefaultAuditLimit || next == "" {
			t.Errorf("Limit %d: %d events, next %q; want %d and a cursor", limit, len(evs), next, store.DefaultAuditLimit)
		}
	}
	evs, next, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "t1", Limit: store.MaxAuditLimit * 10})
	if err != nil || len(evs) != store.DefaultAuditLimit+1 || next != "" {
		t.Errorf("huge Limit: %d events, next %q, %v; want all %d", len(evs), next, err, store.DefaultAuditLimit+1)
	}
}

func testAuditBadCursor(t *testing.T, s store.Store) {
	seedAudit(t, s, "t1")
	_, valid, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "t1", Tool: "memory_add", Limit: 1})
	if err != nil || valid == "" {
		t.Fatalf("no cursor to tamper with: %q, %v", valid, err)
	}
	tampered := []byte(valid)
	tampered[len(tampered)/2] ^= 1

	tests := []struct {
		name   string
		filter store.AuditFilter
	}{
		{name: "garbage", filter: store.AuditFilter{Cursor: "not a cursor!"}},
		{name: "base64 of junk", filter: store.AuditFilter{Cursor: base64.RawURLEncoding.EncodeToString([]byte("a1.x.y.z"))}},
		{name: "SQL", filter: store.AuditFilter{Cursor: "1 OR 1=1; --"}},
		{name: "tampered", filter: store.AuditFilter{Tool: "memory_add", Cursor: string(tampered)}},
		{name: "other filter", filter: store.AuditFilter{Tool: "memory_search", Cursor: valid}},
		{name: "filter dropped", filter: store.AuditFilter{Cursor: valid}},
		{name: "very long", filter: store.AuditFilter{Cursor: string(make([]byte, 5000))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.filter
			f.Tenant = "t1"
			if _, _, err := s.ListAudit(t.Context(), f); !errors.Is(err, store.ErrInvalidCursor) {
				t.Errorf("err = %v, want ErrInvalidCursor", err)
			}
		})
	}
	// The untampered cursor keeps working, with any page size.
	if _, _, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "t1", Tool: "memory_add", Limit: 5, Cursor: valid}); err != nil {
		t.Errorf("valid cursor: %v", err)
	}
}

func testAuditValidation(t *testing.T, s store.Store) {
	tests := []struct {
		name  string
		event store.AuditEvent
		field string
	}{
		{name: "no tenant", event: store.AuditEvent{Tool: "x", Decision: store.DecisionAllow}, field: "Tenant"},
		{name: "no tool", event: store.AuditEvent{Tenant: "t1", Decision: store.DecisionAllow}, field: "Tool"},
		{name: "bad decision", event: store.AuditEvent{Tenant: "t1", Tool: "x", Decision: "maybe"}, field: "Decision"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantInvalid(t, s.AppendAudit(t.Context(), &tc.event), tc.field)
		})
	}
	_, _, err := s.ListAudit(t.Context(), store.AuditFilter{})
	wantInvalid(t, err, "Tenant")
	_, _, err = s.ListAudit(t.Context(), store.AuditFilter{Tenant: "t1", Decision: "maybe"})
	wantInvalid(t, err, "Decision")
}

// testAuditBatch: AppendAudits stores every event of a batch with its own
// id, in one transaction, and a batch with one invalid event stores none.
func testAuditBatch(t *testing.T, s store.Store) {
	b, ok := s.(store.AuditBatcher)
	if !ok {
		t.Fatal("the store does not implement store.AuditBatcher")
	}
	var batch []*store.AuditEvent
	for i := range 10 {
		batch = append(batch, &store.AuditEvent{Tenant: "batch", Tool: "memory_add", Subject: "alice", Decision: store.DecisionAllow,
			At: auditT0.Add(time.Duration(i) * time.Second), Code: "OK", TraceID: fmt.Sprint("t", i)})
	}
	if err := b.AppendAudits(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	ids := map[int64]bool{}
	for _, e := range batch {
		if e.ID == 0 || ids[e.ID] {
			t.Fatalf("event %s has id %d (duplicate or unset)", e.TraceID, e.ID)
		}
		ids[e.ID] = true
	}
	got, _, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "batch", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[0].TraceID != "t9" || got[9].TraceID != "t0" {
		t.Fatalf("listed %d events, newest %v", len(got), got)
	}
	bad := []*store.AuditEvent{
		{Tenant: "batch2", Tool: "memory_add", Decision: store.DecisionAllow, Code: "OK"},
		{Tenant: "", Tool: "memory_add", Decision: store.DecisionAllow, Code: "OK"},
	}
	if err := b.AppendAudits(t.Context(), bad); err == nil {
		t.Fatal("a batch with an event without tenant was accepted")
	}
	if got, _, _ := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "batch2"}); len(got) != 0 {
		t.Fatalf("a refused batch stored %d event(s)", len(got))
	}
}

// partlyIndexed runs fn with the store's audit indexer run after every
// third append, so that its listings read indexed events and the
// unindexed tail together, and page across the boundary.
func partlyIndexed(fn func(*testing.T, store.Store)) func(*testing.T, store.Store) {
	return func(t *testing.T, s store.Store) {
		ix, ok := s.(store.AuditIndexer)
		if !ok {
			t.Fatal("the store does not implement store.AuditIndexer")
		}
		fn(t, &indexingStore{Store: s, ix: ix, t: t})
	}
}

// indexingStore runs the audit indexer after every third append.
type indexingStore struct {
	store.Store
	ix      store.AuditIndexer
	t       *testing.T
	appends int
}

func (s *indexingStore) AppendAudit(ctx context.Context, e *store.AuditEvent) error {
	err := s.Store.AppendAudit(ctx, e)
	if s.appends++; s.appends%3 == 0 {
		// The store's own indexer may have been first: n may be 0.
		if _, ierr := s.ix.IndexAudit(ctx); ierr != nil {
			s.t.Fatalf("IndexAudit: %v", ierr)
		}
	}
	return err
}

func (s *indexingStore) AppendAudits(ctx context.Context, es []*store.AuditEvent) error {
	return s.Store.(store.AuditBatcher).AppendAudits(ctx, es)
}

func (s *indexingStore) PruneAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.Store.(store.AuditPruner).PruneAudit(ctx, before, limit)
}
