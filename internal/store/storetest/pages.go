package storetest

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

func testResultPages(t *testing.T, s store.Store) {
	ps, ok := s.(store.PageStore)
	if !ok {
		t.Fatalf("%s store does not implement store.PageStore", s.Backend())
	}
	ctx, now := t.Context(), time.Now().UTC().Truncate(time.Microsecond)
	items := bytes.Repeat([]byte("0123456789abcdef"), 4096) // a full window's results
	live := &store.ResultPages{ID: "rp_live", Principal: "t\x1fa", Query: "q1",
		Items: items, CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute)}
	old := &store.ResultPages{ID: "rp_old", Principal: "t\x1fa", Query: "q2", Items: []byte("x"),
		CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)}
	for _, p := range []*store.ResultPages{live, old} {
		if err := ps.SaveResultPages(ctx, p); err != nil {
			t.Fatalf("SaveResultPages %s: %v", p.ID, err)
		}
	}
	if err := ps.SaveResultPages(ctx, &store.ResultPages{ID: "rp_live", Principal: "t\x1fb", Query: "q",
		Items: []byte("y"), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err == nil {
		t.Error("a second result set under an existing id was saved")
	}
	got, err := ps.ResultPages(ctx, "rp_live", now)
	if err != nil {
		t.Fatalf("ResultPages: %v", err)
	}
	if got.Principal != live.Principal || got.Query != live.Query ||
		!bytes.Equal(got.Items, items) || !got.CreatedAt.Equal(now) || !got.ExpiresAt.Equal(live.ExpiresAt) {
		t.Errorf("ResultPages = %+v (items %d bytes), want what was saved", got, len(got.Items))
	}
	if got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt in %v, want UTC", got.CreatedAt.Location())
	}
	for _, id := range []string{"rp_old", "rp_missing"} {
		if _, err := ps.ResultPages(ctx, id, now); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ResultPages(%s) error = %v, want ErrNotFound", id, err)
		}
	}
	if _, err := ps.ResultPages(ctx, "rp_live", live.ExpiresAt); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ResultPages at its expiry: error = %v, want ErrNotFound", err)
	}
	n, err := ps.PurgeResultPages(ctx, now)
	if err != nil || n != 1 {
		t.Fatalf("PurgeResultPages = %d, %v; want 1 (the expired one)", n, err)
	}
	if _, err := ps.ResultPages(ctx, "rp_live", now); err != nil {
		t.Errorf("the live result set was purged: %v", err)
	}
}

func testCursorKey(t *testing.T, s store.Store) {
	ps, ok := s.(store.PageStore)
	if !ok {
		t.Fatalf("%s store does not implement store.PageStore", s.Backend())
	}
	keys := make([][]byte, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = ps.CursorKey(t.Context()) })
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil {
			t.Fatalf("CursorKey: %v", errs[i])
		}
		if len(keys[i]) != 32 || !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("CursorKey calls disagree or are not 32 bytes: %x vs %x", keys[i], keys[0])
		}
	}
	if bytes.Equal(keys[0], make([]byte, 32)) {
		t.Error("the cursor key is all zeros")
	}
	again, err := ps.CursorKey(t.Context())
	if err != nil || !bytes.Equal(again, keys[0]) {
		t.Errorf("CursorKey later = %x, %v; want the same key", again, err)
	}
}
