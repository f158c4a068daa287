package client_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // reading the idempotency keys of the SQLite file

	"github.com/toolsvc/toolsvc/client"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/store/backends"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// devTenant is the tenant of the development-mode principal.
const devTenant = "default"

// TestReplicaKilledDuringWriteRunsOnce: two `toolsvc serve` replicas on
// one store (PostgreSQL when TOOLSVC_TEST_POSTGRES is set, as `make test`
// does; else one SQLite file) behind a proxy. The replica that runs an
// add-memory is SIGKILLed the moment its answer starts, so the write is
// in the store but its answer is lost; the client sees the connection
// fail, retries on the other replica with the same idempotency key, and
// gets the first call's result replayed: one memory, one key. A client
// without keys, the same loss repeated on a third replica, gets the
// connection's PROVIDER_ERROR after one attempt: retrying could have
// written twice.
func TestReplicaKilledDuringWriteRunsOnce(t *testing.T) {
	db := filepath.Join(t.TempDir(), "fleet.db")
	if os.Getenv("TOOLSVC_TEST_POSTGRES") != "" {
		db = testserver.PostgresDSN(t)
	}
	a := startServe(t, serveOptions{Args: []string{"--db", db}})
	b := startServe(t, serveOptions{Args: []string{"--db", db}})
	proxy := newKillingProxy(t, a.GRPCAddr, b.GRPCAddr)
	var n attemptCounter
	c, err := client.New(proxy.Addr(), client.WithInsecure(), n.option())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Memory().SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "warm up the connection"}); err != nil {
		t.Fatal(err)
	}
	before := countMemories(t, db)

	proxy.arm(a.kill)
	sent := n.calls.Load()
	token := randomWord(t)
	resp, err := c.Memory().AddMemory(ctx, &memoryv1.AddMemoryRequest{Content: "Written once although its replica died mid-call: " + token})
	if err != nil {
		t.Fatalf("add-memory across the kill: %v\nreplica a:\n%s\nreplica b:\n%s", err, a.logs.String(), b.logs.String())
	}
	if err := proxy.waitKilled(ctx); err != nil {
		t.Fatal("the proxy never killed the first replica")
	}
	if got := n.calls.Load() - sent; got != 2 {
		t.Errorf("add-memory sent %d times, want 2 (to the killed replica, then to the other)", got)
	}
	key := resp.GetMetadata().GetIdempotencyKey()
	if !resp.GetMetadata().GetReplayed() || key == "" {
		t.Errorf("metadata %v: want the first call's result replayed under its key", resp.GetMetadata())
	}
	if after := countMemories(t, db); after != before+1 {
		t.Errorf("memories went from %d to %d: want exactly one write", before, after)
	}
	if got := countKeys(t, db, key); got != 1 {
		t.Errorf("idempotency key %q is in the store %d times, want once", key, got)
	}

	// The same loss without a key: the write ran, but the client cannot
	// know, so it must not send it again.
	r3 := startServe(t, serveOptions{Args: []string{"--db", db}})
	proxy2 := newKillingProxy(t, b.GRPCAddr, r3.GRPCAddr)
	var n2 attemptCounter
	unkeyed, err := client.New(proxy2.Addr(), client.WithInsecure(), client.WithoutIdempotencyKeys(), n2.option())
	if err != nil {
		t.Fatal(err)
	}
	defer unkeyed.Close()
	if _, err := unkeyed.Memory().SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "warm up the connection"}); err != nil {
		t.Fatal(err)
	}
	before = countMemories(t, db)
	proxy2.arm(b.kill)
	sent = n2.calls.Load()
	_, err = unkeyed.Memory().AddMemory(ctx, &memoryv1.AddMemoryRequest{Content: "Written without a key by a replica that died: " + randomWord(t)})
	var e *client.Error
	if !errors.As(err, &e) || !client.IsProviderError(err) || e.Attempts != 1 || n2.calls.Load()-sent != 1 {
		t.Fatalf("add-memory without a key across the kill: %v (sent %d times), want an error after one attempt", err, n2.calls.Load()-sent)
	}
	if after := countMemories(t, db); after != before+1 {
		t.Errorf("memories went from %d to %d: the killed replica's write should stand, once", before, after)
	}
	t.Logf("without a key: %v", err)
}

// countMemories counts the development tenant's memories in the store.
func countMemories(t *testing.T, db string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := backends.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, err := st.CountMemories(ctx, devTenant)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// countKeys counts the completed claims of the idempotency key key.
func countKeys(t *testing.T, db, key string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const q = "SELECT count(*) FROM idempotency_keys WHERE key = $1 AND done"
	var n int
	if filepath.IsAbs(db) {
		d, err := sql.Open("sqlite", db)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.QueryRowContext(ctx, q, key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, q, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// randomWord is a word no other memory contains.
func randomWord(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "tok" + hex.EncodeToString(b)
}
