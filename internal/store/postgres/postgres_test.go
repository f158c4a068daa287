package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
	"github.com/toolsvc/toolsvc/internal/store/postgres"
	"github.com/toolsvc/toolsvc/internal/store/storetest"
)

// dsnEnv names the variable holding the test database DSN.
const dsnEnv = "TOOLSVC_TEST_POSTGRES"

func testDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		tb.Skip(dsnEnv + " is not set; PostgreSQL tests need it, e.g. " +
			dsnEnv + "=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	return dsn
}

// freshSchema creates an empty schema, dropped at cleanup, and returns a
// pool configuration whose connections use it as search_path.
func freshSchema(tb testing.TB) *pgxpool.Config {
	tb.Helper()
	dsn := testDSN(tb)
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])

	admin, err := pgx.Connect(tb.Context(), dsn)
	if err != nil {
		tb.Fatalf("connect %s: %v", dsnEnv, err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(tb.Context(), "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		// tb.Context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	return cfg
}

func openConfig(tb testing.TB, cfg *pgxpool.Config) *postgres.Store {
	tb.Helper()
	// Few connections per store: suites run many stores in parallel
	// against one server.
	s, err := postgres.OpenConfig(tb.Context(), cfg, store.WithMaxConns(3))
	if err != nil {
		tb.Fatalf("OpenConfig: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func openFresh(tb testing.TB) store.Store {
	tb.Helper()
	return openConfig(tb, freshSchema(tb))
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openFresh(t) })
}

func BenchmarkSearch(b *testing.B) { storetest.BenchmarkSearch(b, openFresh) }

func BenchmarkSearchCommonWords(b *testing.B) { storetest.BenchmarkSearchCommonWords(b, openFresh) }

func BenchmarkAddMemory(b *testing.B) { storetest.BenchmarkAddMemory(b, openFresh) }

func BenchmarkSaveResultPages(b *testing.B) { storetest.BenchmarkSaveResultPages(b, openFresh) }

func TestMigrationsIdempotent(t *testing.T) {
	cfg := freshSchema(t)
	const opens = 4
	var wg sync.WaitGroup
	errs := make(chan error, opens)
	for range opens {
		// Replicas starting at once: all must succeed, each migration must
		// run once.
		wg.Go(func() {
			s, err := postgres.OpenConfig(t.Context(), cfg.Copy(), store.WithMaxConns(2))
			if err == nil {
				err = s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent open: %v", err)
		}
	}
	s := openConfig(t, cfg) // and once more, after the fact
	m := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: "still works"}
	if err := s.AddMemory(t.Context(), m); err != nil {
		t.Fatal(err)
	}

	pool, err := pgxpool.NewWithConfig(t.Context(), cfg.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var rows, distinct int
	if err := pool.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	files, _ := os.ReadDir("migrations")
	if rows != len(files) || distinct != rows {
		t.Errorf("schema_migrations has %d rows (%d distinct), want %d", rows, distinct, len(files))
	}
}

// TestAuditIsAppendOnlyInTheDatabase: an event can be neither changed nor
// deleted, in audit_events (moved there by the indexer) nor while it waits
// in audit_incoming (migration 0013).
func TestAuditIsAppendOnlyInTheDatabase(t *testing.T) {
	cfg := freshSchema(t)
	s := openConfig(t, cfg)
	s.StopAuditIndexer()
	if err := s.AppendAudit(t.Context(), &store.AuditEvent{Tenant: "t1", Tool: "x", Decision: store.DecisionAllow}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.IndexAudit(t.Context()); err != nil || n != 1 {
		t.Fatalf("IndexAudit = %d, %v; want the event moved", n, err)
	}
	if err := s.AppendAudit(t.Context(), &store.AuditEvent{Tenant: "t1", Tool: "y", Decision: store.DecisionAllow}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(t.Context(), cfg.ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, stmt := range []string{`UPDATE audit_events SET decision = 'deny'`, `DELETE FROM audit_events`, `TRUNCATE audit_events`,
		`UPDATE audit_incoming SET decision = 'deny'`, `DELETE FROM audit_incoming`, `TRUNCATE audit_incoming`} {
		if _, err := conn.Exec(t.Context(), stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want append-only refusal", stmt, err)
		}
	}
}

// TestAuditRetentionInTheDatabase: pruning raises a cutoff that only moves
// forward, and a DELETE of an event newer than it is still refused.
func TestAuditRetentionInTheDatabase(t *testing.T) {
	cfg := freshSchema(t)
	s := openConfig(t, cfg)
	old, recent := time.Now().Add(-48*time.Hour), time.Now()
	for _, at := range []time.Time{old, recent} {
		if err := s.AppendAudit(t.Context(), &store.AuditEvent{At: at, Tenant: "t1", Tool: "x", Decision: store.DecisionAllow}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.PruneAudit(t.Context(), time.Now().Add(-24*time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("PruneAudit = %d, %v; want the old event deleted", n, err)
	}
	conn, err := pgx.ConnectConfig(t.Context(), cfg.ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, stmt := range []string{`DELETE FROM audit_events`, `TRUNCATE audit_events`,
		`UPDATE audit_retention SET cutoff = '-infinity'`, `DELETE FROM audit_retention`} {
		if _, err := conn.Exec(t.Context(), stmt); err == nil {
			t.Errorf("%s: accepted, want a refusal", stmt)
		}
	}
}

func TestUnreachableIsUnavailable(t *testing.T) {
	tests := []struct {
		name string
		dsn  string
	}{
		{name: "closed port", dsn: "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5"},
		{name: "closed port, postgresql scheme", dsn: "postgresql://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := postgres.Open(t.Context(), tc.dsn)
			if err == nil {
				_ = s.Close()
				t.Fatal("Open succeeded against a closed port")
			}
			var ue *store.UnavailableError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v (%T), want *store.UnavailableError", err, err)
			}
			if ue.Op != "open" || ue.Unwrap() == nil {
				t.Errorf("UnavailableError = %+v", ue)
			}
			msg := strings.ToUpper(err.Error())
			for _, sql := range []string{"SELECT", "INSERT", "CREATE", "UPDATE", "DELETE"} {
				if strings.Contains(msg, sql) {
					t.Errorf("message %q contains SQL %q", err, sql)
				}
			}
		})
	}
}

func TestKilledConnectionsAreUnavailableThenRecover(t *testing.T) {
	cfg := freshSchema(t)
	schema := cfg.ConnConfig.RuntimeParams["search_path"]
	cfg.ConnConfig.RuntimeParams["application_name"] = schema // lets the admin find only this store's connections
	s := openConfig(t, cfg)
	if _, err := s.CountMemories(t.Context(), "t1"); err != nil {
		t.Fatal(err)
	}

	admin, err := pgx.Connect(t.Context(), testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	// What a server restart does to a replica's pool.
	var killed int
	if err := admin.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1`, schema).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatal("no store connection found to terminate")
	}

	// A call on a dead connection may fail, but only as retryable; the pool
	// then replaces the connection and calls succeed again.
	recovered := false
	for range 5 {
		_, err := s.CountMemories(t.Context(), "t1")
		if err == nil {
			recovered = true
			break
		}
		var ue *store.UnavailableError
		if !errors.As(err, &ue) {
			t.Fatalf("err = %v (%T), want *store.UnavailableError", err, err)
		}
	}
	if !recovered {
		t.Error("store did not recover after its connections were terminated")
	}
}

func TestOpenBadDSN(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://user:secret@127.0.0.1:notaport/db")
	if err == nil {
		t.Fatal("Open accepted a malformed DSN")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error leaks the password: %v", err)
	}
	var ue *store.UnavailableError
	if errors.As(err, &ue) {
		t.Errorf("malformed DSN reported as retryable: %v", err)
	}
}

// TestTwoReleasesShareOneDatabase: releases N and N+1 side by side on one
// PostgreSQL schema while N+1 only expands it; N refuses N+2's
// contraction (storetest.SchemaWindow).
func TestTwoReleasesShareOneDatabase(t *testing.T) {
	cfg := freshSchema(t)
	storetest.SchemaWindow(t, func(t *testing.T, later []backend.Migration) (store.Store, error) {
		return postgres.OpenLater(t.Context(), cfg, later)
	}, postgres.NewestMigration(),
		"CREATE TABLE later_notes (id bigint PRIMARY KEY, body text NOT NULL);\nALTER TABLE audit_events ADD COLUMN later_note text;",
		"DROP TABLE later_notes;")
}
