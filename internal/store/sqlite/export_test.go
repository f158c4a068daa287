package sqlite

import (
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
