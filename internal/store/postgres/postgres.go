package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolsvc/toolsvc/internal/base/periodic"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Store is the PostgreSQL implementation of store.Store.
type Store struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	// auditIndexer runs IndexAudit every auditIndexEvery until Close.
	auditIndexer *periodic.Loop
}

var _ store.Store = (*Store)(nil)

// Open connects to the database named by dsn ("postgres://..." or
// "postgresql://..."; pgx pool settings such as pool_max_conns are
// honoured), checks that it answers and applies pending migrations. An
// unreachable server is a *store.UnavailableError. Options:
// store.WithLogger, store.WithMaxConns (overrides pool_max_conns; default
// max(4, NumCPU)).
func Open(ctx context.Context, dsn string, opts ...store.Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, fmt.Errorf("store: postgres DSN: %w", err)
	}
	return OpenConfig(ctx, cfg, opts...)
}

// OpenConfig is Open with a parsed pool configuration, for callers that
// set connection parameters in code (tests set search_path to an isolated
// schema through cfg.ConnConfig.RuntimeParams).
func OpenConfig(ctx context.Context, cfg *pgxpool.Config, opts ...store.Option) (*Store, error) {
	c := store.NewConfig(opts...)
	if c.MaxConns > 0 {
		cfg.MaxConns = int32(min(c.MaxConns, 1<<20))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: postgres pool: %w", err)
	}
	s := &Store{pool: pool, log: c.Logger}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, s.fail(ctx, "open", err)
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	s.auditIndexer = periodic.Start(context.Background(), auditIndexEvery, func(ctx context.Context) {
		if _, err := s.IndexAudit(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "audit indexer", "error", err.Error())
		}
	})
	s.log.DebugContext(ctx, "store opened", "backend", "postgres", "host", cfg.ConnConfig.Host,
		"database", cfg.ConnConfig.Database, "max_conns", cfg.MaxConns)
	return s, nil
}

// Backend returns "postgres".
func (s *Store) Backend() string { return "postgres" }

// Ping checks that the server answers a query.
func (s *Store) Ping(ctx context.Context) error {
	return s.fail(ctx, "Ping", s.pool.Ping(ctx))
}

// Close closes the pool, waiting for acquired connections to be released.
func (s *Store) Close() error {
	if s.auditIndexer != nil {
		s.auditIndexer.Stop() // safe when Close runs more than once
	}
	s.pool.Close()
	return nil
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
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.fail(ctx, "open", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	// Replicas starting together serialise here; the lock is per schema so
	// isolated schemas (tests, tenants of a shared server) do not wait on
	// each other. It is released with the transaction.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('toolsvc.store.migrate:' || coalesce(current_schema(), ''), 0))`); err != nil {
		return s.fail(ctx, "open", err)
	}
	if err := backend.Apply(ctx, pgMigrations{tx}, migrations, s.log, "postgres", func(op string, err error) error {
		return s.fail(ctx, op, err)
	}); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return s.fail(ctx, "open", err)
	}
	return nil
}

// fail turns a driver error into the store's error vocabulary
// (backend.Fail).
func (s *Store) fail(ctx context.Context, op string, err error) error {
	return backend.Fail(ctx, op, err, transient)
}

// pgMigrations runs migrations in a PostgreSQL transaction.
type pgMigrations struct{ tx pgx.Tx }

func (p pgMigrations) Applied(ctx context.Context) ([]backend.Applied, error) {
	if _, err := p.tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return nil, err
	}
	// min_reader (backend.Migration.MinReader) came after the table: a
	// database of an earlier build gains it here, NULL for its rows. The
	// column is itself additive: earlier builds insert without it.
	if _, err := p.tx.Exec(ctx, `ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS min_reader integer`); err != nil {
		return nil, err
	}
	rows, err := p.tx.Query(ctx, `SELECT version, coalesce(min_reader, 0) FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (backend.Applied, error) {
		var v, mr int32
		err := r.Scan(&v, &mr)
		return backend.Applied{Version: int(v), MinReader: int(mr)}, err
	})
}

// Run runs a script: without arguments pgx uses the simple protocol,
// which runs several statements.
func (p pgMigrations) Run(ctx context.Context, m backend.Migration) error {
	_, err := p.tx.Exec(ctx, m.SQL)
	return err
}

func (p pgMigrations) Record(ctx context.Context, m backend.Migration) error {
	_, err := p.tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, min_reader) VALUES ($1, $2, $3)`, m.Version, m.Name, m.MinReader)
	return err
}

// transient reports failures a retry may cure: the server cannot be
// reached, went away, is starting or shutting down, is out of connections,
// or aborted the transaction for a serialisation conflict or deadlock.
func transient(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", // admin/crash shutdown, cannot connect now
			"53300",          // too many connections
			"40001", "40P01": // serialization failure, deadlock
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection exception
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// isUniqueViolation reports a UNIQUE or PRIMARY KEY constraint failure.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// inTx runs fn in a transaction and commits it.
func (s *Store) inTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.fail(ctx, op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	return s.fail(ctx, op, tx.Commit(ctx))
}
