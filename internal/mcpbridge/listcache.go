package mcpbridge

import (
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
	// Hits are listings served from a fresh entry.
	Hits uint64 `json:"cache_hits"`
	// Misses are listings of a visibility class seen for the first time.
	Misses uint64 `json:"cache_misses"`
	// Refreshes are rebuilds of an expired entry.
	Refreshes uint64 `json:"cache_refreshes"`
	// HitRatePct is Hits over all lookups, in percent (0 before any).
	HitRatePct float64 `json:"hit_rate_pct"`
	// Entries is the number of cached visibility classes.
	Entries int `json:"entries"`
}

// listCache keeps, per visibility class (the principal's permission
// grants: two principals with the same grants see the same tools), the
// indexes of the tools it may see. Entries live ttl; an expired or missing
// entry is rebuilt once however many requests ask for it at the same time.
type listCache struct {
	ttl   time.Duration
	tools *toolIndex
	group singleflight.Group

	mu      sync.RWMutex
	entries map[string]*listEntry

	hits, misses, refreshes atomic.Uint64
}

type listEntry struct {
	visible []int
	expires time.Time
}

func newListCache(ttl time.Duration, tools *toolIndex) *listCache {
	return &listCache{ttl: ttl, tools: tools, entries: map[string]*listEntry{}}
}

// visibilityKey is what visibility depends on: the grants, order and
// duplicates aside.
func visibilityKey(p *auth.Principal) string {
	perms := slices.Clone(p.Permissions)
	slices.Sort(perms)
	return strings.Join(slices.Compact(perms), "\n")
}

// visible returns the indexes (into the tool index) of the tools p may see.
func (c *listCache) visible(p *auth.Principal) []int {
	key := visibilityKey(p)
	now := time.Now()
	c.mu.RLock()
	e := c.entries[key]
	c.mu.RUnlock()
	if e != nil && now.Before(e.expires) {
		c.hits.Add(1)
		return e.visible
	}
	if e == nil {
		c.misses.Add(1)
	} else {
		c.refreshes.Add(1)
	}
	v, _, _ := c.group.Do(key, func() (any, error) {
		c.mu.RLock()
		fresh := c.entries[key]
		c.mu.RUnlock()
		if fresh != nil && time.Now().Before(fresh.expires) {
			return fresh.visible, nil // rebuilt by a request just before us
		}
		var vis []int
		for i, t := range c.tools.latest {
			if interceptors.Visible(p, t) {
				vis = append(vis, i)
			}
		}
		c.mu.Lock()
		c.entries[key] = &listEntry{visible: vis, expires: time.Now().Add(c.ttl)}
		c.mu.Unlock()
		return vis, nil
	})
	return v.([]int)
}

func (c *listCache) stats() CacheStats {
	s := CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Refreshes: c.refreshes.Load()}
	if total := s.Hits + s.Misses + s.Refreshes; total > 0 {
		s.HitRatePct = float64(int(float64(s.Hits)*10000/float64(total))) / 100
	}
	c.mu.RLock()
	s.Entries = len(c.entries)
	c.mu.RUnlock()
	return s
}

// CacheStats returns the figures of the tools/list cache.
func (b *Bridge) CacheStats() CacheStats { return b.list.stats() }
