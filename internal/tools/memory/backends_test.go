package memory_test

import (
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
)

type benchBackend struct {
	name string
	open func(tb testing.TB) store.Store
}

// benchBackends is SQLite, and PostgreSQL when TOOLSVC_TEST_POSTGRES is set.
func benchBackends(testing.TB) []benchBackend {
	out := []benchBackend{{name: "sqlite", open: teststore.SQLite}}
	if teststore.HavePostgres() {
		out = append(out, benchBackend{name: "postgres", open: teststore.Postgres})
	}
	return out
}
