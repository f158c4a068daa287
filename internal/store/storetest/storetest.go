// Package storetest is the conformance suite every store.Store backend must
// pass, plus benchmarks they all run. Backends call Run from a test and the
// Benchmark functions from benchmarks, so the two backends are held to
// exactly the same behaviour.
package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

// Run runs the conformance suite against the backend. open must return a
// fresh, empty store and close it in t.Cleanup; it is called once per
// subtest, and subtests run in parallel.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{name: "PingAndBackend", fn: testPingAndBackend},
		{name: "MemoryRoundTrip", fn: testMemoryRoundTrip},
		{name: "MemoryDefaults", fn: testMemoryDefaults},
		{name: "MemoryExplicitID", fn: testMemoryExplicitID},
		{name: "AddMemoryValidation", fn: testAddMemoryValidation},
		{name: "DeleteMemory", fn: testDeleteMemory},
		{name: "ConcurrentAddMemory", fn: testConcurrentAddMemory},
		{name: "TenantIsolation", fn: testTenantIsolation},
		{name: "SearchScopes", fn: testSearchScopes},
		{name: "SearchTags", fn: testSearchTags},
		{name: "SearchRelevance", fn: testSearchRelevance},
		{name: "SearchNoTerms", fn: testSearchNoTerms},
		{name: "SearchHostileTerms", fn: testSearchHostileTerms},
		{name: "SearchValidation", fn: testSearchValidation},
		{name: "SearchMatchedCap", fn: testSearchMatchedCap},
		{name: "SearchMinMatch", fn: testSearchMinMatch},
		{name: "SearchLight", fn: testSearchLight},
		{name: "Pointers", fn: testPointers},
		{name: "SyncRuns", fn: testSyncRuns},
		{name: "ItemVersions", fn: testItemVersions},
		{name: "ConcurrentItemVersions", fn: testConcurrentItemVersions},
		{name: "AuditFilters", fn: testAuditFilters},
		{name: "AuditPagination", fn: testAuditPagination},
		{name: "AuditDefaultLimit", fn: testAuditDefaultLimit},
		{name: "AuditBadCursor", fn: testAuditBadCursor},
		{name: "AuditValidation", fn: testAuditValidation},
		{name: "AuditBatch", fn: testAuditBatch},
		{name: "AuditRetention", fn: testAuditRetention},
		{name: "AuditFiltersPartlyIndexed", fn: partlyIndexed(testAuditFilters)},
		{name: "AuditPaginationPartlyIndexed", fn: partlyIndexed(testAuditPagination)},
		{name: "AuditRetentionPartlyIndexed", fn: partlyIndexed(testAuditRetention)},
		{name: "TimestampsUTC", fn: testTimestampsUTC},
		{name: "Idempotency", fn: testIdempotency},
		{name: "IdempotencyConcurrentClaims", fn: testIdempotencyConcurrentClaims},
		{name: "IdempotencyLease", fn: testIdempotencyLease},
		{name: "Vectors", fn: testVectors},
		{name: "KnowledgeVersion", fn: testKnowledgeVersion},
		{name: "Tasks", fn: testTasks},
		{name: "ResultPages", fn: testResultPages},
		{name: "ResultPagesFairShare", fn: testResultPagesFairShare},
		{name: "CursorKey", fn: testCursorKey},
		{name: "UpstreamDefinitions", fn: testUpstreamDefinitions},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

func testPingAndBackend(t *testing.T, s store.Store) {
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if b := s.Backend(); b != "sqlite" && b != "postgres" {
		t.Errorf("Backend() = %q, want sqlite or postgres", b)
	}
}

// newMemory returns an unsaved memory with the given placement and content.
func newMemory(tenant string, layer store.Layer, scopeID, content string, tags ...string) *store.Memory {
	return &store.Memory{Tenant: tenant, Layer: layer, ScopeID: scopeID, Content: content, Tags: tags}
}

func mustAdd(tb testing.TB, s store.Store, ms ...*store.Memory) {
	tb.Helper()
	for _, m := range ms {
		if err := s.AddMemory(tb.Context(), m); err != nil {
			tb.Fatalf("AddMemory(%q): %v", m.Content, err)
		}
	}
}

func mustGet(tb testing.TB, s store.Store, tenant, id string) store.Memory {
	tb.Helper()
	m, err := s.GetMemory(tb.Context(), tenant, id)
	if err != nil {
		tb.Fatalf("GetMemory(%q, %q): %v", tenant, id, err)
	}
	return m
}

func mustCount(tb testing.TB, s store.Store, tenant string, want int) {
	tb.Helper()
	n, err := s.CountMemories(tb.Context(), tenant)
	if err != nil {
		tb.Fatalf("CountMemories(%q): %v", tenant, err)
	}
	if n != want {
		tb.Fatalf("CountMemories(%q) = %d, want %d", tenant, n, want)
	}
}

func mustSearch(tb testing.TB, s store.Store, q store.SearchQuery) store.SearchResult {
	tb.Helper()
	res, err := s.SearchMemories(tb.Context(), q)
	if err != nil {
		tb.Fatalf("SearchMemories(%+v): %v", q, err)
	}
	for i, c := range res.Candidates {
		if c.Relevance < 0 {
			tb.Errorf("candidate %d relevance %v < 0", i, c.Relevance)
		}
		if c.Memory.Tenant != q.Tenant {
			tb.Errorf("candidate %d from tenant %q, searched %q", i, c.Memory.Tenant, q.Tenant)
		}
	}
	return res
}

// ids returns the IDs of the candidates, in order.
func ids(res store.SearchResult) []string {
	out := make([]string, len(res.Candidates))
	for i, c := range res.Candidates {
		out[i] = c.Memory.ID
	}
	return out
}

func wantInvalid(tb testing.TB, err error, field string) {
	tb.Helper()
	var ia *store.InvalidArgumentError
	if !errors.As(err, &ia) {
		tb.Fatalf("err = %v, want *store.InvalidArgumentError", err)
	}
	if field != "" && ia.Field != field {
		tb.Errorf("InvalidArgumentError.Field = %q, want %q", ia.Field, field)
	}
}

func wantUTC(tb testing.TB, what string, ts time.Time) {
	tb.Helper()
	if ts.IsZero() {
		tb.Errorf("%s is zero", what)
	}
	if ts.Location() != time.UTC {
		tb.Errorf("%s location = %v, want UTC", what, ts.Location())
	}
}

// within checks that ts lies in [from, to] at the store's microsecond
// precision.
func within(tb testing.TB, what string, ts, from, to time.Time) {
	tb.Helper()
	from, to = from.Truncate(time.Microsecond), to.Add(time.Microsecond)
	if ts.Before(from) || ts.After(to) {
		tb.Errorf("%s = %v, want within [%v, %v]", what, ts, from, to)
	}
}
