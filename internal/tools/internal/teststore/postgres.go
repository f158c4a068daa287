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
