package storetest

import (
	"bytes"
	"errors"
	"fmt"
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

// testResultPagesFairShare: one caller's flood of searches cannot expire
// another caller's cursor. Caller A saves a set first, so it
// expires first; caller B (another tenant) saves more than the SQLite
// process's whole budget (64 MiB), and the principals of a third tenant
// together more than a tenant's share. A's set and the third tenant's
// first small set survive; the flooders keep no more than their shares.
func testResultPagesFairShare(t *testing.T, s store.Store) {
	ps, ok := s.(store.PageStore)
	if !ok {
		t.Fatalf("%s store does not implement store.PageStore", s.Backend())
	}
	ctx, now := t.Context(), time.Now().UTC().Truncate(time.Microsecond)
	expires := now.Add(15 * time.Minute)
	save := func(id, tenant, subject string, items []byte, expiresAt time.Time) *store.ResultPages {
		t.Helper()
		p := &store.ResultPages{ID: id, Tenant: tenant, Principal: tenant + "\x1f" + subject, Query: "q",
			Items: items, CreatedAt: now, ExpiresAt: expiresAt}
		if err := ps.SaveResultPages(ctx, p); err != nil {
			t.Fatalf("SaveResultPages %s: %v", id, err)
		}
		return p
	}
	// kept is how many of the sets are still readable, and their bytes.
	kept := func(sets []*store.ResultPages) (n, bytes int) {
		t.Helper()
		for _, p := range sets {
			_, err := ps.ResultPages(ctx, p.ID, now)
			switch {
			case err == nil:
				n, bytes = n+1, bytes+p.Size()
			case !errors.Is(err, store.ErrNotFound):
				t.Fatalf("ResultPages %s: %v", p.ID, err)
			}
		}
		return n, bytes
	}

	a := save("rp_fair_a", "acme", "alice", bytes.Repeat([]byte("a"), 64<<10), expires)
	chunk := bytes.Repeat([]byte("b"), 256<<10)
	var flood []*store.ResultPages
	for i := range (64<<20)/len(chunk) + 16 {
		flood = append(flood, save(fmt.Sprintf("rp_fair_b%03d", i), "globex", "bob", chunk, expires.Add(time.Duration(i+1)*time.Millisecond)))
	}
	if _, err := ps.ResultPages(ctx, a.ID, now); err != nil {
		t.Errorf("caller A's set after caller B saved %d sets of %d KiB: %v (want it kept: B is over its own share)",
			len(flood), len(chunk)>>10, err)
	}
	n, used := kept(flood)
	t.Logf("caller B saved %d sets of %d KiB and keeps %d, %d bytes", len(flood), len(chunk)>>10, n, used)
	if used > store.PrincipalPagesShare || n == 0 {
		t.Errorf("caller B keeps %d sets, %d bytes; want some, at most its share of %d", n, used, store.PrincipalPagesShare)
	}
	if _, err := ps.ResultPages(ctx, flood[len(flood)-1].ID, now); err != nil {
		t.Errorf("caller B's newest set: %v (want kept: the oldest go first)", err)
	}

	// Many principals of one tenant: each within its own share, together
	// over the tenant's. A small set saved first by one of them stays.
	d := save("rp_fair_d", "initech", "dana", []byte("d"), expires)
	var tenantFlood []*store.ResultPages
	per := store.PrincipalPagesShare/len(chunk) - 2
	for p := range store.TenantPagesShare/store.PrincipalPagesShare + 2 {
		for i := range per {
			tenantFlood = append(tenantFlood, save(fmt.Sprintf("rp_fair_c%d_%03d", p, i), "initech", fmt.Sprintf("p%d", p),
				chunk, expires.Add(time.Duration(i+1)*time.Millisecond)))
		}
	}
	if _, err := ps.ResultPages(ctx, d.ID, now); err != nil {
		t.Errorf("a small set of tenant initech's principal dana after %d sets of others there: %v", len(tenantFlood), err)
	}
	n, used = kept(tenantFlood)
	t.Logf("tenant initech's principals saved %d sets and keep %d, %d bytes", len(tenantFlood), n, used)
	if used > store.TenantPagesShare || n == 0 {
		t.Errorf("tenant initech keeps %d sets, %d bytes; want some, at most its share of %d", n, used, store.TenantPagesShare)
	}
	if _, err := ps.ResultPages(ctx, a.ID, now); err != nil {
		t.Errorf("caller A's set after tenant initech's flood: %v", err)
	}
}
