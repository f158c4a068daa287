package mcpbridge

import (
	"context"
	"testing"
	"time"
)

// TestSessionsPerPrincipalAreBounded: a principal's sessions beyond the
// bound end its least recently used idle one; a session with a call in
// flight is kept, and other principals' sessions are untouched.
func TestSessionsPerPrincipalAreBounded(t *testing.T) {
	s := newSessionStore(time.Hour, 3)
	other := s.create("b")
	var a []*peer
	for range 3 {
		a = append(a, s.create("a"))
		time.Sleep(time.Millisecond) // distinct lastUsed times
	}
	// a[0] is the oldest but busy: a[1] goes first, then a[2].
	_, cancel := context.WithCancel(t.Context())
	defer cancel()
	a[0].mu.Lock()
	a[0].inflight["1"] = cancel
	a[0].mu.Unlock()
	a = append(a, s.create("a"), s.create("a"))

	for i, want := range []bool{true, false, false, true, true} {
		if _, ok := s.get(a[i].id, "a"); ok != want {
			t.Errorf("session %d open = %v, want %v", i, ok, want)
		}
	}
	if !a[1].closed || !a[2].closed {
		t.Error("ended sessions were not closed")
	}
	if got := len(s.byOwner["a"]); got != 3 {
		t.Errorf("principal a holds %d sessions, want 3", got)
	}
	if _, ok := s.get(other.id, "b"); !ok {
		t.Error("another principal's session ended")
	}
	if !s.remove(a[3].id, "a") || len(s.byOwner["a"]) != 2 || len(s.m) != 3 {
		t.Errorf("after remove: %d of a's sessions, %d in all; want 2 and 3", len(s.byOwner["a"]), len(s.m))
	}
}
