package sqlite

import (
	"context"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// ScopeKey exposes scopeKey to the test that compares it with SQL's.
func ScopeKey(tenant string, sc store.Scope) string { return scopeKey(tenant, sc) }

// MemoryTerms exposes memoryTerms to the tests that check the full-text
// index against the memories.
func MemoryTerms(scopeKey, content string) string { return memoryTerms(scopeKey, content) }

// ListAuditQuery exposes ListAudit's SQL for f (first page) to the test of
// its query plan.
func ListAuditQuery(f store.AuditFilter) (string, []any) {
	return listAuditQuery(f, backend.Position{})
}

// OpenLater opens path as a later build would: the embedded migrations
// and then later. Tests of this package do not run in parallel.
func OpenLater(ctx context.Context, path string, later []backend.Migration) (*Store, error) {
	extraMigrations = later
	defer func() { extraMigrations = nil }()
	return Open(ctx, path)
}

// NewestMigration is the newest embedded migration's version.
func NewestMigration() int {
	ms, err := backend.LoadMigrations(migrationFS, "migrations")
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// StopAuditIndexer stops the background indexer, for tests that need
// events to stay after the index mark.
func (s *Store) StopAuditIndexer() { s.auditIndexer.Stop() }
