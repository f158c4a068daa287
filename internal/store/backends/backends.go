// Package backends chooses among the store backends (sqlite, postgres)
// by a DSN and opens the one it names. It sits apart
// from package store so that store does not import its own backends.
package backends

import (
	"context"
	"errors"
	"strings"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/postgres"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
)

// Open opens the backend named by dsn and applies its migrations:
//
//   - "postgres://..." or "postgresql://...": PostgreSQL (package postgres);
//   - "sqlite:PATH", "file:PATH" or a plain PATH: SQLite in that file,
//     created with its parent directory if missing (package sqlite).
//
// Any other "scheme://" is an error rather than a file name. Options are
// store.WithLogger and store.WithMaxConns.
func Open(ctx context.Context, dsn string, opts ...store.Option) (store.Store, error) {
	kind, target, err := Parse(dsn)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "postgres":
		return postgres.Open(ctx, target, opts...)
	default:
		return sqlite.Open(ctx, target, opts...)
	}
}

// Parse reports which backend dsn names ("sqlite" or "postgres") and what
// that backend is given: the unchanged DSN for PostgreSQL, the file path for
// SQLite.
func Parse(dsn string) (backend, target string, err error) {
	lower := strings.ToLower(dsn)
	switch {
	case dsn == "":
		return "", "", errors.New("store: empty DSN")
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return "postgres", dsn, nil
	case strings.HasPrefix(lower, "sqlite:"):
		return sqlitePath(dsn[len("sqlite:"):])
	case strings.HasPrefix(lower, "file:"):
		return sqlitePath(dsn[len("file:"):])
	case strings.Contains(dsn, "://"):
		scheme, _, _ := strings.Cut(dsn, "://")
		return "", "", errors.New("store: unsupported DSN scheme " + quote(scheme) + " (want postgres://, postgresql://, sqlite:PATH or a file path)")
	default:
		return sqlitePath(dsn)
	}
}

func sqlitePath(path string) (string, string, error) {
	// "sqlite:///abs/path" and "file:///abs/path" are the URL spellings of
	// an absolute path.
	if rest, ok := strings.CutPrefix(path, "//"); ok {
		path = rest
	}
	if path == "" {
		return "", "", errors.New("store: sqlite DSN has no path")
	}
	return "sqlite", path, nil
}

func quote(s string) string {
	if len(s) > 20 {
		s = s[:20] + "..."
	}
	return `"` + s + `"`
}
