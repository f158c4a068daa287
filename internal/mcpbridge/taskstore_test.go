package mcpbridge

import (
	"testing"
	"time"
)

// TestTaskStoreBoundAndTTL checks the task store's limits: at its bound a
// principal's oldest finished task makes room, no room while all are
// running (the call is then answered without a task), other principals
// are not affected, and a finished task is forgotten once its TTL from
// creation has passed.
func TestTaskStoreBoundAndTTL(t *testing.T) {
	s := newTaskStore(2, time.Minute)
	now := time.Unix(1_800_000_000, 0)
	nop := func() {}
	finish := func(tk *task) {
		tk.mu.Lock()
		tk.status = taskCompleted
		tk.mu.Unlock()
		s.wg.Done()
	}
	a1, ok1 := s.create("a", nop, now)
	a2, ok2 := s.create("a", nop, now.Add(time.Second))
	if !ok1 || !ok2 {
		t.Fatal("the first two tasks were refused")
	}
	if _, ok := s.create("a", nop, now); ok {
		t.Fatal("a third running task of one principal was accepted beyond the bound")
	}
	b1, ok := s.create("b", nop, now)
	if !ok {
		t.Fatal("another principal was refused")
	}
	finish(a1)
	a3, ok := s.create("a", nop, now.Add(2*time.Second))
	if !ok {
		t.Fatal("no room made by the finished task")
	}
	if _, ok := s.get(a1.id, "a", now); ok {
		t.Fatal("the dropped task is still served")
	}
	if _, ok := s.get(a2.id, "b", now); ok {
		t.Fatal("another principal sees the task")
	}
	if _, ok := s.get(a2.id, "a", now); !ok {
		t.Fatal("the owner does not see its task")
	}
	finish(a2)
	later := now.Add(time.Minute + 2*time.Second)
	if _, ok := s.get(a2.id, "a", later); ok {
		t.Fatal("a finished task is served past its TTL")
	}
	s.expire(later)
	if n := s.len(); n != 2 {
		t.Fatalf("after expiry %d tasks, want the 2 running ones", n)
	}
	if _, ok := s.get(a3.id, "a", later); !ok {
		t.Fatal("a running task was forgotten at its TTL")
	}
	finish(a3)
	finish(b1)
	s.close()
}
