package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// busyTimeoutMs is how long a connection waits for a lock held by another
// process before failing with SQLITE_BUSY (then a store.UnavailableError).
const busyTimeoutMs = 5000

// Store is the SQLite implementation of store.Store.
type Store struct {
	// writer has exactly one connection: SQLite serialises writers anyway,
	// and waiting in database/sql's pool is cheaper and fairer than
	// spinning on SQLITE_BUSY.
	writer *sql.DB
	// reader is a pool of query_only connections.
	reader *sql.DB
	log    *slog.Logger
}

var _ store.Store = (*Store)(nil)

// Open opens (creating it and its parent directory if needed) the database
// file at path and applies pending migrations. Options: store.WithLogger,
// store.WithMaxConns (reader connections, default max(4, GOMAXPROCS)).
func Open(ctx context.Context, path string, opts ...store.Option) (*Store, error) {
	cfg := store.NewConfig(opts...)
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file::memory:") {
		return nil, errors.New("store: sqlite needs a file path (in-memory databases cannot be shared by the reader pool)")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("store: sqlite path %q must not contain '?' or '#'", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: sqlite path %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o750); err != nil {
		return nil, fmt.Errorf("store: create directory for %q: %w", abs, err)
	}

	s := &Store{log: cfg.Logger}
	s.writer, err = sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		return nil, fmt.Errorf("store: open %q: %w", abs, err)
	}
	s.writer.SetMaxOpenConns(1)
	s.writer.SetMaxIdleConns(1)
	s.writer.SetConnMaxLifetime(0)
	s.writer.SetConnMaxIdleTime(0)

	// Migrate before the readers connect: the first connection switches
	// the file to WAL, which readers then inherit.
	if err := s.migrate(ctx); err != nil {
		_ = s.writer.Close()
		return nil, err
	}

	readers := cfg.MaxConns
	if readers == 0 {
		readers = max(4, runtime.GOMAXPROCS(0))
	}
	s.reader, err = sql.Open("sqlite", dsn(abs, false))
	if err != nil {
		_ = s.writer.Close()
		return nil, fmt.Errorf("store: open %q: %w", abs, err)
	}
	s.reader.SetMaxOpenConns(readers)
	s.reader.SetMaxIdleConns(readers)
	if err := s.Ping(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.log.DebugContext(ctx, "store opened", "backend", "sqlite", "path", abs, "readers", readers)
	return s, nil
}

// dsn builds a modernc.org/sqlite DSN. Pragmas run on every new
// connection; busy_timeout runs first so the others wait for locks.
func dsn(path string, writer bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMs))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	if writer {
		q.Add("_pragma", "journal_mode(WAL)")
		// BEGIN IMMEDIATE takes the write lock up front, so a transaction
		// that reads then writes never fails to upgrade its lock.
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(1)")
		// Searches touch many pages: a larger page cache and memory-mapped
		// reads keep them off the read syscall path.
		q.Add("_pragma", "cache_size(-32768)")
		q.Add("_pragma", "mmap_size(268435456)")
	}
	return path + "?" + q.Encode()
}

// Backend returns "sqlite".
func (s *Store) Backend() string { return "sqlite" }

// Ping checks that both the writer and a reader answer.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.writer.PingContext(ctx); err != nil {
		return s.fail(ctx, "Ping", err)
	}
	if err := s.reader.PingContext(ctx); err != nil {
		return s.fail(ctx, "Ping", err)
	}
	return nil
}

// Close closes all connections. The WAL is checkpointed by SQLite when the
// last connection closes.
func (s *Store) Close() error {
	var errs []error
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	errs = append(errs, s.writer.Close())
	return errors.Join(errs...)
}

func (s *Store) migrate(ctx context.Context) (err error) {
	migrations, err := backend.LoadMigrations(migrationFS, "migrations")
	if err != nil {
		return err
	}
	// One IMMEDIATE transaction: a second process opening the same file
	// waits (busy_timeout) and then finds the migrations applied.
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(ctx, "open", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return s.fail(ctx, "open", err)
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return s.fail(ctx, "open", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			_ = rows.Close()
			return s.fail(ctx, "open", err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return s.fail(ctx, "open", err)
	}
	for _, m := range migrations {
		if applied[m.Version] {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return s.fail(ctx, "migrate "+m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, backend.Now().UnixMicro()); err != nil {
			return s.fail(ctx, "open", err)
		}
		s.log.InfoContext(ctx, "store migration applied", "backend", "sqlite", "migration", m.Name)
	}
	if err := tx.Commit(); err != nil {
		return s.fail(ctx, "open", err)
	}
	return nil
}

// fail turns a driver error into the store's error vocabulary: context
// errors stay matchable with errors.Is, transient conditions become
// store.UnavailableError, everything else is wrapped with the operation.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("store: %s: %w", op, ctxErr)
	}
	if transient(err) {
		return &store.UnavailableError{Op: op, Err: err}
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// transient reports SQLite conditions that may clear on retry: locks held
// past busy_timeout and I/O failures.
func transient(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PROTOCOL:
		return true
	}
	return false
}

// isUniqueViolation reports a UNIQUE or PRIMARY KEY constraint failure.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// writeTx runs fn in an IMMEDIATE transaction on the writer connection.
func (s *Store) writeTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(ctx, op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.fail(ctx, op, err)
	}
	return nil
}
