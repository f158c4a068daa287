package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/toolsvc/toolsvc/internal/base/periodic"
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
	// writerStmts and readerStmts are the hot statements of each pool,
	// prepared once (stmtcache.go).
	writerStmts, readerStmts *stmtCache
	// writers and readers order the callers of each pool (gate.go).
	writers, readers gate
	// adds commits concurrent AddMemory calls together (groupadd.go).
	adds addGroup
	log  *slog.Logger
	// ckpt is the checkpointer's own connection; checkpointer runs
	// keepWALShort until Close.
	ckpt         *sql.DB
	checkpointer *periodic.Loop
	// auditIndexer runs IndexAudit every auditIndexEvery until Close.
	auditIndexer *periodic.Loop
	// pages are the result sets of paged searches (pages.go).
	pages pageMemo
	// walRestartFrames is the WAL length that forces a restart; set at
	// Open and read only by the checkpointer.
	walRestartFrames int
}

var _ store.Store = (*Store)(nil)

// Open opens (creating it and its parent directory if needed) the database
// file at path and applies pending migrations. Options: store.WithLogger,
// store.WithMaxConns (reader connections, default max(4, GOMAXPROCS)),
// store.WithWALRestartFrames (default defaultWALRestartFrames).
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

	s := &Store{log: cfg.Logger, walRestartFrames: cfg.WALRestartFrames}
	switch {
	case s.walRestartFrames == 0:
		s.walRestartFrames = defaultWALRestartFrames
	case s.walRestartFrames < 0:
		s.walRestartFrames = math.MaxInt
	}
	s.writer, err = sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		return nil, fmt.Errorf("store: open %q: %w", abs, err)
	}
	s.writer.SetMaxOpenConns(1)
	s.writer.SetMaxIdleConns(1)
	s.writer.SetConnMaxLifetime(0)
	s.writer.SetConnMaxIdleTime(0)
	s.writerStmts = &stmtCache{db: s.writer}
	s.writers = newGate(1)

	// Migrate before the readers connect: the first connection switches
	// the file to WAL, which readers then inherit.
	if err := s.migrateWhenFree(ctx); err != nil {
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
	s.readerStmts = &stmtCache{db: s.reader}
	s.readers = newGate(readers)
	s.ckpt, err = sql.Open("sqlite", checkpointDSN(abs))
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("store: open %q: %w", abs, err)
	}
	s.ckpt.SetMaxOpenConns(1)
	if err := s.Ping(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	restarted := 0 // the WAL's length at the last restart
	s.checkpointer = periodic.Start(context.Background(), checkpointEvery, func(context.Context) { restarted = s.keepWALShort(restarted) })
	s.auditIndexer = periodic.Start(context.Background(), auditIndexEvery, func(ctx context.Context) {
		if _, err := s.IndexAudit(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "audit indexer", "error", err.Error())
		}
	})
	s.log.DebugContext(ctx, "store opened", "backend", "sqlite", "path", abs, "readers", readers)
	return s, nil
}

// WriterDSN is the writer connection's DSN for path (its pragmas: WAL,
// synchronous FULL, immediate transactions), for the floor of a durable
// write that BenchmarkAddMemoryFloor and make bench's write rows measure.
func WriterDSN(path string) string { return dsn(path, true) }

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
		// The checkpointer, not the writer, checkpoints (keepWALShort).
		q.Add("_pragma", "wal_autocheckpoint(0)")
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walFileLimit))
	} else {
		q.Add("_pragma", "query_only(1)")
		// Searches touch many pages: a larger page cache and memory-mapped
		// reads keep them off the read syscall path. The map covers up to
		// 2 GiB of the file (this build's SQLITE_MAX_MMAP_SIZE; the map is
		// address space, its pages are the kernel's page cache, shared by
		// every connection): at 256 MiB a million-memory store read most
		// pages with pread through each connection's own cache, and a
		// search cost more CPU (BenchmarkHybridSearchMemories; measured:
		// docs/BENCHMARKS.md, "Design measurements").
		q.Add("_pragma", "cache_size(-32768)")
		q.Add("_pragma", "mmap_size(2147418112)")
	}
	return path + "?" + q.Encode()
}

// checkpointDSN is the checkpointer's connection: it waits at most
// checkpointWait for readers, holding the write lock meanwhile, so a
// checkpoint never stalls writers for long; a busy checkpoint is retried
// at the next tick.
func checkpointDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", checkpointWait.Milliseconds()))
	return path + "?" + q.Encode()
}

// WAL bounds. A read looks up every page it needs in the WAL's index
// first, one hash table per 4,096 frames, and reads the pages it finds
// there with a system call rather than from the memory map, so reads cost
// more the longer the WAL is (BenchmarkSearchWALLength; measured:
// docs/BENCHMARKS.md, "Design measurements"). SQLite starts a WAL over only when the writer finds every
// frame copied back and no reader still using one, which a busy service,
// always reading, rarely offers: the WAL then grows until a quiet moment
// or without bound (both seen in soaks, same section).
//
// So checkpoints are the checkpointer's, off the write path
// (wal_autocheckpoint is 0 on the writer): every checkpointEvery it copies
// back what it can (PASSIVE, which never waits), and once the log passes
// s.walRestartFrames it forces a RESTART, which holds off writers until the
// readers of older snapshots finish (milliseconds: reads are short; at most
// checkpointWait, else it tries again at the next tick), after which the
// next write starts the WAL from its beginning. The writer's
// journal_size_limit trims the file back to walFileLimit then.
const (
	checkpointEvery = 250 * time.Millisecond
	checkpointWait  = 250 * time.Millisecond
	walFileLimit    = 64 << 20
)

// defaultWALRestartFrames is the restart length unless
// store.WithWALRestartFrames says otherwise. At 1,000 frames (4 MiB) a read
// pays about 1% more than over an empty WAL.
const defaultWALRestartFrames = 1000

// keepWALShort checkpoints the WAL (every checkpointEvery until Close),
// restarting it once it is long; restarted is its length at the last
// restart, which it returns anew.
func (s *Store) keepWALShort(restarted int) int {
	// A restarted WAL keeps its length until the next write starts it
	// over: an idle store is not restarted again and again.
	if frames, _ := s.checkpoint("PASSIVE"); frames >= s.walRestartFrames && frames != restarted {
		if _, ok := s.checkpoint("RESTART"); ok {
			return frames
		}
	}
	return restarted
}

// checkpoint runs one checkpoint of mode and returns the frames the WAL
// held and whether it completed (0 and false after an error, which it
// logs).
func (s *Store) checkpoint(mode string) (frames int, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*checkpointWait)
	defer cancel()
	var busy, done int
	err := s.ckpt.QueryRowContext(ctx, `PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &frames, &done)
	switch {
	case err != nil:
		s.log.WarnContext(ctx, "store: WAL checkpoint failed", "backend", "sqlite", "mode", mode, "error", err)
		return 0, false
	case mode == "PASSIVE":
	case busy != 0:
		s.log.DebugContext(ctx, "store: WAL restart busy, retrying", "backend", "sqlite", "frames", frames, "checkpointed", done)
	default:
		s.log.DebugContext(ctx, "store: WAL restarted", "backend", "sqlite", "frames", frames)
	}
	return frames, busy == 0
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
	if s.checkpointer != nil {
		s.checkpointer.Stop() // safe when Close runs more than once
	}
	if s.auditIndexer != nil {
		s.auditIndexer.Stop()
	}
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.Close())
	}
	if s.reader != nil {
		errs = append(errs, s.readerStmts.close(), s.reader.Close())
	}
	errs = append(errs, s.writerStmts.close(), s.writer.Close())
	return errors.Join(errs...)
}

// migrateWhenFree runs migrate, retrying while the file is locked. Two
// connections switching a new file to WAL at once can see SQLITE_BUSY at
// connect without SQLite calling the busy handler (the journal-mode change
// is not a lock wait it retries), so Open waits here instead, up to
// busyTimeoutMs, as it would for any other lock.
func (s *Store) migrateWhenFree(ctx context.Context) error {
	deadline := time.Now().Add(busyTimeoutMs * time.Millisecond)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := s.migrate(ctx)
		if !busy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// busy reports a lock another connection holds.
func busy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}

// extraMigrations are applied after the embedded ones: a test sets them
// to play a later build (export_test.go).
var extraMigrations []backend.Migration

func (s *Store) migrate(ctx context.Context) (err error) {
	migrations, err := backend.LoadMigrations(migrationFS, "migrations")
	if err != nil {
		return err
	}
	migrations = append(migrations, extraMigrations...)
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
	if err := backend.Apply(ctx, sqliteMigrations{tx}, migrations, s.log, "sqlite", func(op string, err error) error {
		return s.fail(ctx, op, err)
	}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.fail(ctx, "open", err)
	}
	return nil
}

// fail turns a driver error into the store's error vocabulary
// (backend.Fail).
func (s *Store) fail(ctx context.Context, op string, err error) error {
	return backend.Fail(ctx, op, err, transient)
}

// sqliteMigrations runs migrations in a SQLite transaction.
type sqliteMigrations struct{ tx *sql.Tx }

func (q sqliteMigrations) Applied(ctx context.Context) ([]backend.Applied, error) {
	// min_reader (backend.Migration.MinReader) came after the table: a
	// database of an earlier build gains it here, NULL for its rows. The
	// column is itself additive: earlier builds insert without it.
	if _, err := q.tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL,
		min_reader INTEGER
	)`); err != nil {
		return nil, err
	}
	var hasMinReader int
	if err := q.tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('schema_migrations') WHERE name = 'min_reader'`).Scan(&hasMinReader); err != nil {
		return nil, err
	}
	if hasMinReader == 0 {
		if _, err := q.tx.ExecContext(ctx, `ALTER TABLE schema_migrations ADD COLUMN min_reader INTEGER`); err != nil {
			return nil, err
		}
	}
	rows, err := q.tx.QueryContext(ctx, `SELECT version, coalesce(min_reader, 0) FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var applied []backend.Applied
	for rows.Next() {
		var a backend.Applied
		if err := rows.Scan(&a.Version, &a.MinReader); err != nil {
			return nil, err
		}
		applied = append(applied, a)
	}
	return applied, rows.Err()
}

func (q sqliteMigrations) Run(ctx context.Context, m backend.Migration) error {
	_, err := q.tx.ExecContext(ctx, m.SQL)
	return err
}

func (q sqliteMigrations) Record(ctx context.Context, m backend.Migration) error {
	_, err := q.tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at, min_reader) VALUES (?, ?, ?, ?)`,
		m.Version, m.Name, backend.Now().UnixMicro(), m.MinReader)
	return err
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
	leave, err := s.writeTurn(ctx, op)
	if err != nil {
		return err
	}
	defer leave()
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
