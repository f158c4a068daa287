package sqlite

import "github.com/toolsvc/toolsvc/internal/store"

// SetWALCheckpointBytes lowers the WAL size that forces a checkpoint, for
// a test; it returns the previous value.
func SetWALCheckpointBytes(n int64) int64 {
	old := walCheckpointBytes
	walCheckpointBytes = n
	return old
}

// ScopeKey exposes scopeKey to the test that compares it with SQL's.
func ScopeKey(tenant string, sc store.Scope) string { return scopeKey(tenant, sc) }
