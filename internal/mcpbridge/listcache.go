package mcpbridge

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

// CacheStats are the figures of the tools/list cache, reported on /healthz
// (seed 004).
type CacheStats struct {
	// Hits are listings served from a fresh entry, as rendered bytes.
	Hits uint64 `json:"cache_hits"`
	// Misses are listings of a visibility class seen for the first time,
	// or of a page not rendered yet.
	Misses uint64 `json:"cache_misses"`
	// Refreshes are rebuilds of an expired entry.
	Refreshes uint64 `json:"cache_refreshes"`
	// HitRatePct is Hits over all lookups, in percent (0 before any).
	HitRatePct float64 `json:"hit_rate_pct"`
	// Entries is the number of cached visibility classes.
	Entries int `json:"entries"`
}

// listCache keeps the rendered pages of tools/list. A visibility class
// (the principal's permission grants: two principals with the same grants
// see the same tools) maps to a view, the set of tools it may see; a view
// holds the complete result JSON of each of its pages, rendered on first
// request. Views are shared by classes that see the same tools, so a
// cached listing is the write of precomputed bytes. Class entries live
// ttl; an expired or missing one is rebuilt once however many requests ask
// for it at the same time.
type listCache struct {
	ttl      time.Duration
	pageSize int
	tools    *toolIndex
	group    singleflight.Group

	mu      sync.RWMutex
	classes map[string]*listClass
	// views are by visible set (viewKey), so that classes seeing the same
	// tools share their rendered pages.
	views map[string]*listView

	hits, misses, refreshes atomic.Uint64
}

type listClass struct {
	view    *listView
	expires time.Time
}

// listView is one set of visible tools and its pages.
type listView struct {
	// visible are indexes into the tool index.
	visible []int
	// built is when the view was rendered: a class rebuilt within ttl of
	// it reuses it.
	built time.Time
	// cursors maps the nextCursor of each page to the page it starts.
	cursors map[string]int
	pages   []listPage
}

// listPage is the rendered result of one page, built once.
type listPage struct {
	once sync.Once
	body []byte
}

func newListCache(ttl time.Duration, pageSize int, tools *toolIndex) *listCache {
	return &listCache{ttl: ttl, pageSize: pageSize, tools: tools, classes: map[string]*listClass{}, views: map[string]*listView{}}
}

// visibilityKey is what visibility depends on: the grants, order and
// duplicates aside.
func visibilityKey(p *auth.Principal) string {
	switch len(p.Permissions) {
	case 0:
		return ""
	case 1:
		return p.Permissions[0]
	}
	perms := slices.Clone(p.Permissions)
	slices.Sort(perms)
	return strings.Join(slices.Compact(perms), "\n")
}

// page returns the result JSON of the tools/list page at cursor for p
// ("" is the first page); false when the cursor is not one tools/list
// returned for this view. The bytes are shared: callers must not modify
// them.
func (c *listCache) page(p *auth.Principal, cursor string) ([]byte, bool) {
	v, fresh := c.view(p)
	n := 0
	if cursor != "" {
		var ok bool
		if n, ok = v.cursors[cursor]; !ok {
			// A cursor of the same format at an offset that is not a page
			// boundary (a hand-made one) is served, uncached.
			start, ok := decodeCursor(cursor, len(v.visible))
			if !ok {
				return nil, false
			}
			return c.render(v, start), true
		}
	}
	pg := &v.pages[n]
	rendered := false
	pg.once.Do(func() {
		pg.body = c.render(v, n*c.pageSize)
		rendered = true
	})
	switch {
	case !fresh:
		// counted by view
	case rendered:
		c.misses.Add(1)
	default:
		c.hits.Add(1)
	}
	return pg.body, true
}

// view returns the view of p's visibility class; fresh reports whether the
// class entry was fresh (the lookup not yet counted).
func (c *listCache) view(p *auth.Principal) (*listView, bool) {
	key := visibilityKey(p)
	now := time.Now()
	c.mu.RLock()
	e := c.classes[key]
	c.mu.RUnlock()
	if e != nil && now.Before(e.expires) {
		return e.view, true
	}
	if e == nil {
		c.misses.Add(1)
	} else {
		c.refreshes.Add(1)
	}
	v, _, _ := c.group.Do(key, func() (any, error) {
		c.mu.RLock()
		fresh := c.classes[key]
		c.mu.RUnlock()
		if fresh != nil && time.Now().Before(fresh.expires) {
			return fresh.view, nil // rebuilt by a request just before us
		}
		var vis []int
		for i, t := range c.tools.latest {
			if interceptors.Visible(p, t) {
				vis = append(vis, i)
			}
		}
		vk := viewKey(vis)
		now := time.Now()
		c.mu.Lock()
		defer c.mu.Unlock()
		view := c.views[vk]
		if view == nil || now.Sub(view.built) >= c.ttl {
			view = c.newView(vis, now)
			c.views[vk] = view
		}
		c.classes[key] = &listClass{view: view, expires: now.Add(c.ttl)}
		return view, nil
	})
	return v.(*listView), false
}

// viewKey identifies a visible set.
func viewKey(vis []int) string {
	b := make([]byte, 0, 4*len(vis))
	for _, i := range vis {
		b = append(b, byte(i>>24), byte(i>>16), byte(i>>8), byte(i))
	}
	return string(b)
}

func (c *listCache) newView(vis []int, now time.Time) *listView {
	pages := max(1, (len(vis)+c.pageSize-1)/c.pageSize)
	v := &listView{visible: vis, built: now, cursors: make(map[string]int, pages-1), pages: make([]listPage, pages)}
	for n := 1; n < pages; n++ {
		v.cursors[encodeCursor(n*c.pageSize)] = n
	}
	return v
}

// render builds the result of the page of v starting at start:
// {"tools":[...],"nextCursor":"..."}, from the tools' rendered
// descriptions.
func (c *listCache) render(v *listView, start int) []byte {
	end := min(start+c.pageSize, len(v.visible))
	size := 64
	for _, i := range v.visible[start:end] {
		size += len(c.tools.rendered[i]) + 1
	}
	var out bytes.Buffer
	out.Grow(size)
	out.WriteString(`{"tools":[`)
	for n, i := range v.visible[start:end] {
		if n > 0 {
			out.WriteByte(',')
		}
		out.Write(c.tools.rendered[i])
	}
	out.WriteByte(']')
	if end < len(v.visible) {
		out.WriteString(`,"nextCursor":"`)
		out.WriteString(encodeCursor(end))
		out.WriteByte('"')
	}
	out.WriteByte('}')
	// Clipped: a caller appending to the shared bytes must reallocate.
	return slices.Clip(out.Bytes())
}

func (c *listCache) stats() CacheStats {
	s := CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Refreshes: c.refreshes.Load()}
	if total := s.Hits + s.Misses + s.Refreshes; total > 0 {
		s.HitRatePct = float64(int(float64(s.Hits)*10000/float64(total))) / 100
	}
	c.mu.RLock()
	s.Entries = len(c.classes)
	c.mu.RUnlock()
	return s
}

// CacheStats returns the figures of the tools/list cache.
func (b *Bridge) CacheStats() CacheStats { return b.catalog.Load().list.stats() }
