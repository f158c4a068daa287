package sqlite

import (
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// SetWALCheckpointBytes lowers the WAL size that forces a checkpoint, for
// a test; it returns the previous value.
func SetWALCheckpointBytes(n int64) int64 {
	old := walCheckpointBytes
	walCheckpointBytes = n
	return old
}

// ScopeKey exposes scopeKey to the test that compares it with SQL's.
func ScopeKey(tenant string, sc store.Scope) string { return scopeKey(tenant, sc) }

// ListAuditQuery exposes ListAudit's SQL for f (first page) to the test of
// its query plan.
func ListAuditQuery(f store.AuditFilter) (string, []any) {
	return listAuditQuery(f, backend.Position{})
}
