package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
)

// TestVectorFeed: two stores on one schema (two replicas). What one
// writes, the other reads from the feed with the current vector; a delete
// is reported with no vector; a change whose transaction commits after a
// later one is not skipped by the cursor.
func TestVectorFeed(t *testing.T) {
	cfg := freshSchema(t)
	a, b := openConfig(t, cfg.Copy()), openConfig(t, cfg.Copy())
	ctx := t.Context()
	cur, err := b.VectorFeedStart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add := func(content string) store.Memory {
		t.Helper()
		m := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: content, SourceType: store.SourceManual}
		if err := a.AddMemory(ctx, m); err != nil {
			t.Fatal(err)
		}
		if _, err := a.SetVectors(ctx, []store.MemoryVector{{Tenant: "t1", ID: m.ID, Model: "m1", Content: content, Vec: []float32{1, 2}}}); err != nil {
			t.Fatal(err)
		}
		return *m
	}
	changes := func(want int) map[string]store.MemoryVector {
		t.Helper()
		out := map[string]store.MemoryVector{}
		deadline := time.Now().Add(10 * time.Second)
		for len(out) < want {
			cs, next, err := b.VectorChanges(ctx, "m1", cur, 2)
			if err != nil {
				t.Fatal(err)
			}
			if next.XID < cur.XID || (next.XID == cur.XID && next.Seq < cur.Seq) {
				t.Fatalf("cursor went back: %+v after %+v", next, cur)
			}
			cur = next
			for _, c := range cs {
				out[c.ID] = c
			}
			if time.Now().After(deadline) {
				t.Fatalf("feed: %d changes, want %d", len(out), want)
			}
		}
		return out
	}

	m1 := add("first")
	got := changes(1)
	if c := got[m1.ID]; c.Layer != store.LayerUser || c.ScopeID != "u1" || len(c.Vec) != 2 || c.Vec[1] != 2 {
		t.Errorf("change of %s = %+v", m1.ID, c)
	}

	// A writer whose transaction began first but commits last.
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	late := add("late")
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE memory_vectors SET vec = $1 WHERE tenant = 't1' AND id = $2`, []byte{0, 0, 128, 63, 0, 0, 0, 64}, late.ID); err != nil {
		t.Fatal(err)
	}
	changes(1) // late's insert
	// A change committed while the older transaction is open waits for
	// it: the cursor must not pass the older one's change.
	m3 := add("third")
	cs, next, err := b.VectorChanges(ctx, "m1", cur, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 0 || next != cur {
		t.Errorf("with an older transaction open, the feed moved to %+v with %v", next, cs)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got = changes(2)
	if c, ok := got[late.ID]; !ok || len(c.Vec) != 2 || c.Vec[0] != 1 {
		t.Errorf("the late commit's change was skipped or stale: %+v (ok %v)", c, ok)
	}
	if _, ok := got[m3.ID]; !ok {
		t.Errorf("the change committed meanwhile was skipped")
	}

	if err := a.DeleteMemory(ctx, "t1", m1.ID); err != nil {
		t.Fatal(err)
	}
	got = changes(1)
	if c, ok := got[m1.ID]; !ok || c.Vec != nil {
		t.Errorf("a deleted memory's change = %+v, %v; want no vector", c, ok)
	}
	if err := b.PruneVectorFeed(ctx, 0); err != nil {
		t.Fatal(err)
	}
}
