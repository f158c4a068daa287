package teststore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/postgres"
)

// PostgresEnv names the variable holding the test database's DSN.
const PostgresEnv = "TOOLSVC_TEST_POSTGRES"

// HavePostgres reports whether PostgresEnv is set.
func HavePostgres() bool { return os.Getenv(PostgresEnv) != "" }

// Postgres opens a store in a fresh schema of the database named by
// TOOLSVC_TEST_POSTGRES, dropped at cleanup; without the variable tb is
// skipped.
func Postgres(tb testing.TB) store.Store {
	tb.Helper()
	return PostgresReplicas(tb, 1)[0]
}

// PostgresReplicas opens n stores on one fresh schema, as n replicas of
// the service share one database; without TOOLSVC_TEST_POSTGRES tb is
// skipped.
func PostgresReplicas(tb testing.TB, n int) []store.Store {
	tb.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		tb.Skip(PostgresEnv + " is not set")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "tools_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("teststore: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("teststore: create schema: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, base); err == nil {
			_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			_ = c.Close(ctx)
		}
	})
	return openSchema(tb, base, schema, n)
}

// PostgresKept opens a store in the schema named schema (lower-case
// letters, digits and underscores) of the database named by
// TOOLSVC_TEST_POSTGRES, creating it if missing and keeping it after the
// test: benchmarks seed one once and reuse it. It reports whether
// MarkPostgresSeeded marked the schema; a schema left unmarked (a seeding
// that did not finish) is dropped and created afresh.
func PostgresKept(tb testing.TB, schema string) (store.Store, bool) {
	tb.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		tb.Skip(PostgresEnv + " is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("teststore: connect: %v", err)
	}
	defer conn.Close(ctx)
	var mark *string
	err = conn.QueryRow(ctx, `SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1`, schema).Scan(&mark)
	seeded := err == nil && mark != nil && *mark == seededMark
	if !seeded {
		ident := pgx.Identifier{schema}.Sanitize()
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident+" CASCADE"); err != nil {
			tb.Fatalf("teststore: drop schema: %v", err)
		}
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
			tb.Fatalf("teststore: create schema: %v", err)
		}
	}
	return openSchema(tb, base, schema, 1)[0], seeded
}

// MarkPostgresSeeded records on a schema of PostgresKept that its seeding
// finished.
func MarkPostgresSeeded(tb testing.TB, schema string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, os.Getenv(PostgresEnv))
	if err != nil {
		tb.Fatalf("teststore: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "COMMENT ON SCHEMA "+pgx.Identifier{schema}.Sanitize()+" IS '"+seededMark+"'"); err != nil {
		tb.Fatalf("teststore: mark schema: %v", err)
	}
}

// seededMark is the comment MarkPostgresSeeded puts on a schema.
const seededMark = "toolsvc benchmark: seeded"

// openSchema opens n stores on schema of the database base names.
func openSchema(tb testing.TB, base, schema string, n int) []store.Store {
	tb.Helper()
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("teststore: %s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	out := make([]store.Store, n)
	for i := range out {
		s, err := postgres.Open(tb.Context(), u.String())
		if err != nil {
			tb.Fatalf("teststore: open PostgreSQL: %v", err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		out[i] = s
	}
	return out
}
