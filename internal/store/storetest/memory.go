package storetest

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

var memoryIDPattern = regexp.MustCompile(`^mem_[0-9a-f]{32}$`)

func testMemoryRoundTrip(t *testing.T, s store.Store) {
	before := time.Now()
	m := &store.Memory{
		Tenant:     "t1",
		Layer:      store.LayerUser,
		ScopeID:    "u1",
		Content:    "User prefers functional programming patterns over OOP",
		Tags:       []string{"preferences", "coding-style", "preferences"},
		Metadata:   map[string]any{"k": "v", "n": 1.5, "nested": map[string]any{"ok": true}, "list": []any{"a", 2.0}},
		SourceType: store.SourceConversation,
	}
	mustAdd(t, s, m)
	after := time.Now()

	if !memoryIDPattern.MatchString(m.ID) {
		t.Errorf("ID = %q, want mem_ + 32 lowercase hex", m.ID)
	}
	wantUTC(t, "CreatedAt", m.CreatedAt)
	within(t, "CreatedAt", m.CreatedAt, before, after)
	if !m.UpdatedAt.Equal(m.CreatedAt) {
		t.Errorf("UpdatedAt = %v, want CreatedAt %v", m.UpdatedAt, m.CreatedAt)
	}
	if want := []string{"preferences", "coding-style"}; !reflect.DeepEqual(m.Tags, want) {
		t.Errorf("Tags after AddMemory = %q, want de-duplicated %q", m.Tags, want)
	}

	got := mustGet(t, s, "t1", m.ID)
	if !reflect.DeepEqual(got, *m) {
		t.Errorf("GetMemory =\n%+v\nwant\n%+v", got, *m)
	}
	mustCount(t, s, "t1", 1)
}

func testMemoryDefaults(t *testing.T, s store.Store) {
	m := newMemory("t1", store.LayerCompany, "t1", "no tags, no metadata")
	mustAdd(t, s, m)
	got := mustGet(t, s, "t1", m.ID)
	if got.SourceType != store.SourceManual {
		t.Errorf("SourceType = %q, want %q", got.SourceType, store.SourceManual)
	}
	if got.Tags == nil || len(got.Tags) != 0 {
		t.Errorf("Tags = %#v, want empty non-nil", got.Tags)
	}
	if got.Metadata == nil || len(got.Metadata) != 0 {
		t.Errorf("Metadata = %#v, want empty non-nil", got.Metadata)
	}
	if got.KnowledgeItemID != "" || got.ContentHash != "" || got.Orphaned {
		t.Errorf("pointer fields set on a plain memory: %+v", got)
	}
}

func testMemoryExplicitID(t *testing.T, s store.Store) {
	const id = "mem_0123456789abcdef0123456789abcdef"
	m := newMemory("t1", store.LayerUser, "u1", "explicit id")
	m.ID = id
	mustAdd(t, s, m)
	if m.ID != id {
		t.Fatalf("ID = %q, want the supplied %q", m.ID, id)
	}

	dup := newMemory("t1", store.LayerUser, "u1", "duplicate")
	dup.ID = id
	if err := s.AddMemory(t.Context(), dup); !errors.Is(err, store.ErrConflict) {
		t.Errorf("AddMemory with an existing ID: err = %v, want ErrConflict", err)
	}

	// IDs are per tenant: another tenant may hold the same one, and each
	// sees only its own.
	other := newMemory("t2", store.LayerUser, "u1", "same id, other tenant")
	other.ID = id
	mustAdd(t, s, other)
	if got := mustGet(t, s, "t1", id); got.Content != "explicit id" {
		t.Errorf("t1 sees content %q", got.Content)
	}
	if got := mustGet(t, s, "t2", id); got.Content != "same id, other tenant" {
		t.Errorf("t2 sees content %q", got.Content)
	}
}

func testAddMemoryValidation(t *testing.T, s store.Store) {
	valid := func() *store.Memory { return newMemory("t1", store.LayerUser, "u1", "content") }
	tests := []struct {
		name   string
		mutate func(m *store.Memory)
		field  string
	}{
		{name: "empty tenant", mutate: func(m *store.Memory) { m.Tenant = "" }, field: "Tenant"},
		{name: "unknown layer", mutate: func(m *store.Memory) { m.Layer = "galaxy" }, field: "Layer"},
		{name: "empty layer", mutate: func(m *store.Memory) { m.Layer = "" }, field: "Layer"},
		{name: "empty scope", mutate: func(m *store.Memory) { m.ScopeID = "" }, field: "ScopeID"},
		{name: "empty content", mutate: func(m *store.Memory) { m.Content = "" }, field: "Content"},
		{name: "invalid UTF-8 content", mutate: func(m *store.Memory) { m.Content = "\xff\xfe" }, field: "Content"},
		{name: "unknown source type", mutate: func(m *store.Memory) { m.SourceType = "dream" }, field: "SourceType"},
		{name: "empty tag", mutate: func(m *store.Memory) { m.Tags = []string{"ok", ""} }, field: "Tags"},
		{name: "metadata not JSON", mutate: func(m *store.Memory) { m.Metadata = map[string]any{"f": math.Inf(1)} }, field: "Metadata"},
		{name: "too many tags", mutate: func(m *store.Memory) {
			for i := range 65 {
				m.Tags = append(m.Tags, fmt.Sprint("tag", i))
			}
		}, field: "Tags"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := valid()
			tc.mutate(m)
			wantInvalid(t, s.AddMemory(t.Context(), m), tc.field)
		})
	}
	mustCount(t, s, "t1", 0)
}

func testDeleteMemory(t *testing.T, s store.Store) {
	keep := newMemory("t1", store.LayerUser, "u1", "kafka keeps this one", "x")
	gone := newMemory("t1", store.LayerUser, "u1", "kafka deletes this one", "x")
	mustAdd(t, s, keep, gone)

	if err := s.DeleteMemory(t.Context(), "t1", gone.ID); err != nil {
		t.Fatalf("DeleteMemory: %v", err)
	}
	if _, err := s.GetMemory(t.Context(), "t1", gone.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetMemory after delete: err = %v, want ErrNotFound", err)
	}
	if err := s.DeleteMemory(t.Context(), "t1", gone.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second DeleteMemory: err = %v, want ErrNotFound", err)
	}
	if err := s.DeleteMemory(t.Context(), "t1", "mem_doesnotexist"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteMemory(unknown): err = %v, want ErrNotFound", err)
	}
	mustCount(t, s, "t1", 1)

	// The deleted row must be gone from the full-text index and the tag
	// filter too.
	for _, q := range []store.SearchQuery{
		{Tenant: "t1", Terms: []string{"kafka"}, Scopes: []store.Scope{{Layer: store.LayerUser, ScopeID: "u1"}}},
		{Tenant: "t1", Tags: []string{"x"}, Scopes: []store.Scope{{Layer: store.LayerUser, ScopeID: "u1"}}},
	} {
		res := mustSearch(t, s, q)
		if got := ids(res); !reflect.DeepEqual(got, []string{keep.ID}) || res.Matched != 1 {
			t.Errorf("search %+v after delete = %v (matched %d), want only %s", q, got, res.Matched, keep.ID)
		}
	}
}

func testConcurrentAddMemory(t *testing.T, s store.Store) {
	const workers, each = 8, 20
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[string]bool{}
		errs = make(chan error, workers*each)
	)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				m := newMemory("t1", store.LayerSession, fmt.Sprint("s", w), fmt.Sprintf("worker %d item %d", w, i))
				if err := s.AddMemory(t.Context(), m); err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				seen[m.ID] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent AddMemory: %v", err)
	}
	if len(seen) != workers*each {
		t.Fatalf("%d distinct IDs, want %d", len(seen), workers*each)
	}
	mustCount(t, s, "t1", workers*each)
	for id := range seen {
		mustGet(t, s, "t1", id)
	}
}

func testTimestampsUTC(t *testing.T, s store.Store) {
	zone := time.FixedZone("UTC+5", 5*3600)
	at := time.Date(2025, 3, 4, 5, 6, 7, 123456789, zone)
	wantAt := at.UTC().Truncate(time.Microsecond)

	m := newMemory("t1", store.LayerUser, "u1", "time zones")
	mustAdd(t, s, m)
	got := mustGet(t, s, "t1", m.ID)
	wantUTC(t, "Memory.CreatedAt", got.CreatedAt)
	wantUTC(t, "Memory.UpdatedAt", got.UpdatedAt)

	run := &store.SyncRun{Tenant: "t1", StartedAt: at}
	if err := s.RecordSyncRun(t.Context(), run); err != nil {
		t.Fatalf("RecordSyncRun: %v", err)
	}
	st, err := s.SyncStats(t.Context(), "t1")
	if err != nil || st.LastRun == nil {
		t.Fatalf("SyncStats = %+v, %v", st, err)
	}
	wantUTC(t, "SyncRun.StartedAt", st.LastRun.StartedAt)
	if !st.LastRun.StartedAt.Equal(wantAt) {
		t.Errorf("SyncRun.StartedAt = %v, want %v", st.LastRun.StartedAt, wantAt)
	}

	v := &store.ItemVersion{Tenant: "t1", ItemID: "adr-1", Change: store.ChangeAdded, At: at}
	if err := s.AppendItemVersion(t.Context(), v); err != nil {
		t.Fatalf("AppendItemVersion: %v", err)
	}
	hist, err := s.ItemHistory(t.Context(), "t1", "adr-1")
	if err != nil || len(hist) != 1 {
		t.Fatalf("ItemHistory = %+v, %v", hist, err)
	}
	wantUTC(t, "ItemVersion.At", hist[0].At)
	if !hist[0].At.Equal(wantAt) {
		t.Errorf("ItemVersion.At = %v, want %v", hist[0].At, wantAt)
	}

	e := &store.AuditEvent{Tenant: "t1", Tool: "memory_add", Decision: store.DecisionAllow, At: at}
	if err := s.AppendAudit(t.Context(), e); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	evs, _, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "t1"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("ListAudit = %+v, %v", evs, err)
	}
	wantUTC(t, "AuditEvent.At", evs[0].At)
	if !evs[0].At.Equal(wantAt) {
		t.Errorf("AuditEvent.At = %v, want %v", evs[0].At, wantAt)
	}
}
