package mcpbridge

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
)

// decodePage decodes a cached page.
func decodePage(tb testing.TB, body []byte) (names []string, next string) {
	tb.Helper()
	var p struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		tb.Fatalf("page %.200s: %v", body, err)
	}
	for _, t := range p.Tools {
		names = append(names, t.Name)
	}
	return names, p.NextCursor
}

// TestListCachePages follows the cursors of a cached listing, and checks
// that the pages are rendered once and shared by principals who see the
// same tools.
func TestListCachePages(t *testing.T) {
	t.Parallel()
	b := benchBridge(t)
	if err := SyntheticTools(b, 250); err != nil {
		t.Fatal(err)
	}
	c := b.catalog.Load().list
	all := &auth.Principal{Permissions: []string{"*"}}
	// Every synthetic tool needs at most these grants: the same tools.
	same := &auth.Principal{Permissions: []string{"sync:*", "memory:*", "knowledge:*", "audit:*", "sync:*"}}
	var names []string
	cursor := ""
	for pages := 1; ; pages++ {
		body, ok := c.page(all, cursor)
		if !ok {
			t.Fatalf("page %d: cursor %q refused", pages, cursor)
		}
		again, _ := c.page(all, cursor)
		if &body[0] != &again[0] {
			t.Fatalf("page %d rendered twice", pages)
		}
		if shared, _ := c.page(same, cursor); !bytes.Equal(shared, body) {
			t.Fatalf("page %d differs for the same visible tools", pages)
		}
		page, next := decodePage(t, body)
		if want := min(100, 250-len(names)); len(page) != want {
			t.Fatalf("page %d: %d tools, want %d", pages, len(page), want)
		}
		names = append(names, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(names) != 250 || names[0] != b.catalog.Load().tools.latest[0].Name {
		t.Fatalf("listed %d tools from %q", len(names), names[0])
	}
	if s := c.stats(); s.Misses != 4 || s.Hits != 5 || s.Entries != 2 || len(c.views) != 1 {
		// Misses: the two classes and the two pages after the first.
		t.Fatalf("stats %+v, %d views", s, len(c.views))
	}

	none := &auth.Principal{Permissions: []string{"nothing:read"}}
	if body, ok := c.page(none, ""); !ok || string(body) != `{"tools":[]}` {
		t.Fatalf("listing of a principal who sees nothing = %s %t", body, ok)
	}
	for _, bad := range []string{"garbage", encodeCursor(0), encodeCursor(250), encodeCursor(-1)} {
		if _, ok := c.page(all, bad); ok {
			t.Errorf("cursor %q accepted", bad)
		}
	}
	// A cursor of the format between page boundaries is served.
	if body, ok := c.page(all, encodeCursor(240)); !ok {
		t.Error("cursor at offset 240 refused")
	} else if page, next := decodePage(t, body); len(page) != 10 || next != "" {
		t.Errorf("page at offset 240: %d tools, next %q", len(page), next)
	}
}

// TestListCacheExpiry: an expired class is rebuilt once by concurrent
// listings, with freshly rendered pages.
func TestListCacheExpiry(t *testing.T) {
	t.Parallel()
	b := benchBridge(t)
	c := newListCache(50*time.Millisecond, 100, b.catalog.Load().tools)
	p := &auth.Principal{Permissions: []string{"*"}}
	first, _ := c.page(p, "")
	time.Sleep(60 * time.Millisecond)
	var wg sync.WaitGroup
	got := make([][]byte, 8)
	for i := range got {
		wg.Go(func() { got[i], _ = c.page(p, "") })
	}
	wg.Wait()
	for _, g := range got {
		if !bytes.Equal(g, first) || &g[0] != &got[0][0] {
			t.Fatal("the rebuilt listing differs or was rendered more than once")
		}
	}
	if &got[0][0] == &first[0] {
		t.Fatal("the expired listing was not rebuilt")
	}
	// A listing may render the page of the rebuilt class (a miss) before
	// the one that rebuilt it.
	if s := c.stats(); s.Refreshes == 0 || s.Misses+s.Refreshes+s.Hits != 9 {
		t.Fatalf("stats %+v", s)
	}
}
