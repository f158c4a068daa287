package storetest

import (
	"bytes"
	"github.com/toolsvc/toolsvc/internal/base/mcptask"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

// testTasks is the MCP task store: the per-owner bound (the oldest
// finished task makes room, none while all run), expiry, progress and
// outcome, lease renewal returning the cancellations requested, the
// failure of tasks whose lease ran out, and the purge.
func testTasks(t *testing.T, s store.Store) {
	ts, ok := s.(mcptask.Store)
	if !ok {
		t.Fatalf("%s store does not implement mcptask.Store", s.Backend())
	}
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	task := func(id, owner, replica string, created time.Time) *mcptask.Record {
		return &mcptask.Record{ID: id, Owner: owner, Replica: replica, Status: mcptask.Working,
			CreatedAt: created, UpdatedAt: created, LeaseUntil: now.Add(time.Minute)}
	}
	create := func(r *mcptask.Record, want bool) {
		t.Helper()
		ok, err := ts.CreateTask(ctx, r, 2, now.Add(-time.Hour))
		if err != nil || ok != want {
			t.Fatalf("CreateTask(%s) = %v, %v; want %v", r.ID, ok, err, want)
		}
	}
	create(task("a1", "alice", "r1", now.Add(-3*time.Second)), true)
	create(task("a2", "alice", "r1", now.Add(-2*time.Second)), true)
	create(task("a3", "alice", "r1", now), false) // both running
	create(task("b1", "bob", "r2", now), true)

	if err := ts.ProgressTask(ctx, "a1", "1 of 4: warming up", now); err != nil {
		t.Fatal(err)
	}
	if err := ts.FinishTask(ctx, &mcptask.Record{ID: "a1", Replica: "r1", Status: "completed", Message: "",
		Result: []byte(`{"ok":true}`), UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	got, err := ts.GetTask(ctx, "a1")
	if err != nil || got == nil || got.Status != "completed" || !bytes.Equal(got.Result, []byte(`{"ok":true}`)) ||
		got.Owner != "alice" || !got.CreatedAt.Equal(now.Add(-3*time.Second)) {
		t.Fatalf("GetTask(a1) = %+v, %v", got, err)
	}
	// A finished task is left as it is by a late outcome.
	if err := ts.FinishTask(ctx, &mcptask.Record{ID: "a1", Replica: "r1", Status: "failed", UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if got, _ := ts.GetTask(ctx, "a1"); got.Status != "completed" {
		t.Fatalf("a finished task was overwritten: %+v", got)
	}
	create(task("a3", "alice", "r1", now), true) // a1 made room
	if got, err := ts.GetTask(ctx, "a1"); err != nil || got != nil {
		t.Fatalf("the finished task that made room: %+v, %v", got, err)
	}
	if got, err := ts.GetTask(ctx, "nope"); err != nil || got != nil {
		t.Fatalf("GetTask(unknown) = %+v, %v; want nil, nil", got, err)
	}

	if err := ts.CancelTask(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	cancel, err := ts.RenewTasks(ctx, "r1", now.Add(2*time.Minute))
	if err != nil || len(cancel) != 1 || cancel[0] != "a2" {
		t.Fatalf("RenewTasks(r1) = %v, %v; want [a2]", cancel, err)
	}
	if got, _ := ts.GetTask(ctx, "a3"); !got.LeaseUntil.Equal(now.Add(2 * time.Minute)) {
		t.Fatalf("a3's lease = %v, want renewed", got.LeaseUntil)
	}

	// r2 stopped renewing: past its lease, b1 fails; r1's tasks do not.
	n, err := ts.FailLostTasks(ctx, now.Add(90*time.Second), "task lost", []byte(`{"code":-32603}`))
	if err != nil || n != 1 {
		t.Fatalf("FailLostTasks = %d, %v; want 1", n, err)
	}
	if got, _ := ts.GetTask(ctx, "b1"); got.Status != "failed" || got.Message != "task lost" || string(got.Error) != `{"code":-32603}` {
		t.Fatalf("lost task = %+v", got)
	}
	if got, _ := ts.GetTask(ctx, "a3"); got.Status != mcptask.Working {
		t.Fatalf("a renewed task failed: %+v", got)
	}

	// Purge: finished tasks created before the cutoff go; working ones stay.
	n, err = ts.PurgeTasks(ctx, now.Add(time.Second))
	if err != nil || n != 1 {
		t.Fatalf("PurgeTasks = %d, %v; want 1 (b1)", n, err)
	}
	if got, _ := ts.GetTask(ctx, "a2"); got == nil {
		t.Fatal("a working task was purged")
	}
}
