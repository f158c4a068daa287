package redisfleet_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolsvc/toolsvc/internal/store/redisfleet"
)

func testClient(t *testing.T) (*redis.Client, string) {
	t.Helper()
	url := os.Getenv("TOOLSVC_TEST_REDIS")
	if url == "" {
		t.Skip("TOOLSVC_TEST_REDIS is not set; run the tests with `make test`, which sets it")
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	var b [6]byte
	_, _ = rand.Read(b[:])
	return c, "test:" + hex.EncodeToString(b[:]) + ":"
}

// TestSessions: a session's fields round-trip; an owner's sessions beyond
// the bound evict the least recently used (touched ones stay); Update
// and Touch of an ended session report it ended, without bringing it
// back; another owner is not affected.
func TestSessions(t *testing.T) {
	c, prefix := testClient(t)
	s := redisfleet.NewSessions(c, prefix, 2*time.Second)
	ctx := t.Context()
	idle := time.Minute
	for _, id := range []string{"s1", "s2"} {
		if ended, err := s.Create(ctx, id, "alice", map[string]string{"level": "-1"}, idle, 2); err != nil || len(ended) != 0 {
			t.Fatalf("Create(%s) = %v, %v", id, ended, err)
		}
		time.Sleep(5 * time.Millisecond) // distinct last-use scores
	}
	if _, err := s.Create(ctx, "b1", "bob", nil, idle, 2); err != nil {
		t.Fatal(err)
	}
	if f, err := s.Touch(ctx, "s1", "alice", idle); err != nil || f["owner"] != "alice" || f["level"] != "-1" {
		t.Fatalf("Touch(s1) = %v, %v", f, err)
	}
	time.Sleep(5 * time.Millisecond)
	ended, err := s.Create(ctx, "s3", "alice", nil, idle, 2)
	if err != nil || len(ended) != 1 || ended[0] != "s2" {
		t.Fatalf("Create beyond the bound ended %v, %v; want [s2] (s1 was used since)", ended, err)
	}
	if f, err := s.Load(ctx, "s2"); err != nil || f != nil {
		t.Fatalf("Load(evicted) = %v, %v", f, err)
	}
	if ok, err := s.Update(ctx, "s1", map[string]string{"level": "0"}); err != nil || !ok {
		t.Fatalf("Update(s1) = %v, %v", ok, err)
	}
	if f, _ := s.Load(ctx, "s1"); f["level"] != "0" {
		t.Fatalf("level after Update = %v", f)
	}
	if err := s.Delete(ctx, "s1", "alice"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Update(ctx, "s1", map[string]string{"level": "1"}); err != nil || ok {
		t.Fatalf("Update(deleted) = %v, %v; want false", ok, err)
	}
	if f, err := s.Touch(ctx, "s1", "alice", idle); err != nil || f != nil {
		t.Fatalf("Touch(deleted) = %v, %v; want nil", f, err)
	}
	if n, _ := c.Exists(ctx, prefix+"mcp:session:s1").Result(); n != 0 {
		t.Fatal("a deleted session came back")
	}
	if f, _ := s.Load(ctx, "b1"); f["owner"] != "bob" {
		t.Fatalf("another owner's session = %v", f)
	}
	if ttl, _ := c.PTTL(ctx, prefix+"mcp:session:b1").Result(); ttl <= 0 || ttl > idle {
		t.Fatalf("session TTL = %v, want within the idle time", ttl)
	}
	for _, k := range []string{"s3", "b1"} {
		_ = c.Del(context.Background(), prefix+"mcp:session:"+k)
	}
}

// TestSessionsCreateEvictsInOneStep: 20 parallel Creates of one owner
// with the bound 3 leave exactly 3 sessions; no Create evicts the session
// it admits, and every session evicted is reported once, by one Create
// (counting, choosing and deleting in three round trips let
// parallel Creates evict each other's new sessions and report the same
// eviction twice).
func TestSessionsCreateEvictsInOneStep(t *testing.T) {
	c, prefix := testClient(t)
	s := redisfleet.NewSessions(c, prefix, 5*time.Second)
	const n, bound = 20, 3
	ended := make([][]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ended[i], errs[i] = s.Create(t.Context(), fmt.Sprintf("p%02d", i), "alice", map[string]string{"level": "-1"}, time.Minute, bound)
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for _, e := range ended[i] {
			if e == fmt.Sprintf("p%02d", i) || seen[e] {
				t.Fatalf("Create(p%02d) ended %v: its own session, or one another Create reported", i, ended[i])
			}
			seen[e] = true
		}
	}
	var alive int
	for i := range n {
		id := fmt.Sprintf("p%02d", i)
		f, err := s.Load(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if f != nil {
			alive++
			if seen[id] {
				t.Fatalf("%s was reported ended and is still there", id)
			}
		}
		_ = c.Del(context.Background(), prefix+"mcp:session:"+id)
	}
	if alive != bound || len(seen) != n-bound {
		t.Fatalf("%d sessions left, %d reported ended; want %d and %d", alive, len(seen), bound, n-bound)
	}
}

// TestBus: a message published is heard by a listener; its first
// subscription is reported as such.
func TestBus(t *testing.T) {
	c, prefix := testClient(t)
	b := redisfleet.NewBus(c, prefix+"events")
	ctx, cancel := context.WithCancel(t.Context())
	heard, subscribed := make(chan string, 1), make(chan bool, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Listen(ctx, func(m string) { heard <- m }, func(again bool) { subscribed <- again })
	}()
	if again := <-subscribed; again {
		t.Fatal("first subscription reported as a resubscription")
	}
	if err := b.Publish(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	if m := <-heard; m != "hello" {
		t.Fatalf("heard %q", m)
	}
	cancel()
	<-done
}
