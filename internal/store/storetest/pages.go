package storetest

import (
	"bytes"
	"errors"
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
	live := &store.ResultPages{ID: "rp_live", Principal: "t\x1fa", Query: "q1", Key: []byte{0, 1, 2, 255},
		Items: items, CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute)}
	old := &store.ResultPages{ID: "rp_old", Principal: "t\x1fa", Query: "q2", Key: []byte{9}, Items: []byte("x"),
		CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)}
	for _, p := range []*store.ResultPages{live, old} {
		if err := ps.SaveResultPages(ctx, p); err != nil {
			t.Fatalf("SaveResultPages %s: %v", p.ID, err)
		}
	}
	if err := ps.SaveResultPages(ctx, &store.ResultPages{ID: "rp_live", Principal: "t\x1fb", Query: "q", Key: []byte{1},
		Items: []byte("y"), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err == nil {
		t.Error("a second result set under an existing id was saved")
	}
	got, err := ps.ResultPages(ctx, "rp_live", now)
	if err != nil {
		t.Fatalf("ResultPages: %v", err)
	}
	if got.Principal != live.Principal || got.Query != live.Query || !bytes.Equal(got.Key, live.Key) ||
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
