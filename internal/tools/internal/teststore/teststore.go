// Package teststore opens fresh stores for the built-in tools' unit tests
// and benchmarks: SQLite in a temporary directory.
package teststore

import (
	"path/filepath"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
)

// SQLite opens an empty SQLite store in tb's temporary directory and closes
// it at cleanup.
func SQLite(tb testing.TB) store.Store {
	tb.Helper()
	s, err := sqlite.Open(tb.Context(), filepath.Join(tb.TempDir(), "store.db"))
	if err != nil {
		tb.Fatalf("teststore: open SQLite: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("teststore: close: %v", err)
		}
	})
	return s
}
