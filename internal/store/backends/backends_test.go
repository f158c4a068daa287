package backends_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/backends"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name        string
		dsn         string
		wantBackend string
		wantTarget  string
		wantErr     bool
	}{
		{name: "postgres", dsn: "postgres://u@h:5432/db", wantBackend: "postgres", wantTarget: "postgres://u@h:5432/db"},
		{name: "postgresql", dsn: "postgresql://u@h/db?sslmode=disable", wantBackend: "postgres", wantTarget: "postgresql://u@h/db?sslmode=disable"},
		{name: "upper-case scheme", dsn: "POSTGRES://u@h/db", wantBackend: "postgres", wantTarget: "POSTGRES://u@h/db"},
		{name: "sqlite relative", dsn: "sqlite:data/store.db", wantBackend: "sqlite", wantTarget: "data/store.db"},
		{name: "sqlite absolute URL", dsn: "sqlite:///var/lib/toolsvc.db", wantBackend: "sqlite", wantTarget: "/var/lib/toolsvc.db"},
		{name: "file", dsn: "file:/tmp/x.db", wantBackend: "sqlite", wantTarget: "/tmp/x.db"},
		{name: "plain path", dsn: "./store.db", wantBackend: "sqlite", wantTarget: "./store.db"},
		{name: "empty", dsn: "", wantErr: true},
		{name: "sqlite without path", dsn: "sqlite:", wantErr: true},
		{name: "unknown scheme", dsn: "mysql://u@h/db", wantErr: true},
		{name: "redis is not a store", dsn: "redis://127.0.0.1:6379", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			backend, target, err := backends.Parse(tc.dsn)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q) err = %v, wantErr %v", tc.dsn, err, tc.wantErr)
			}
			if backend != tc.wantBackend || target != tc.wantTarget {
				t.Errorf("Parse(%q) = %q, %q; want %q, %q", tc.dsn, backend, target, tc.wantBackend, tc.wantTarget)
			}
		})
	}
}

// postgresDSN returns the test server's DSN pointed at a fresh schema
// (dropped at cleanup) through the search_path run-time parameter, or "" when
// TOOLSVC_TEST_POSTGRES is unset.
func postgresDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("TOOLSVC_TEST_POSTGRES")
	if dsn == "" {
		return ""
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name        string
		dsn         string
		wantBackend string
		skip        string
	}{
		{name: "sqlite scheme", dsn: "sqlite:" + filepath.Join(dir, "a", "store.db"), wantBackend: "sqlite"},
		{name: "file scheme", dsn: "file:" + filepath.Join(dir, "b.db"), wantBackend: "sqlite"},
		{name: "plain path", dsn: filepath.Join(dir, "c.db"), wantBackend: "sqlite"},
		{name: "postgres", dsn: postgresDSN(t), wantBackend: "postgres",
			skip: "TOOLSVC_TEST_POSTGRES is not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dsn == "" {
				t.Skip(tc.skip)
			}
			s, err := backends.Open(t.Context(), tc.dsn, store.WithMaxConns(2))
			if err != nil {
				t.Fatalf("Open(%q): %v", tc.dsn, err)
			}
			defer s.Close()
			if s.Backend() != tc.wantBackend {
				t.Errorf("Backend() = %q, want %q", s.Backend(), tc.wantBackend)
			}
			if err := s.Ping(t.Context()); err != nil {
				t.Errorf("Ping: %v", err)
			}
		})
	}
}
