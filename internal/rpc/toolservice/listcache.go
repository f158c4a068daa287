package toolservice

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

// CacheStats are the figures of the tool-list cache, reported on /healthz
// (docs/OPERATIONS.md, `/healthz` and `/readyz`).
type CacheStats struct {
	// Hits are listings whose visible set came from the cache.
	Hits uint64 `json:"cache_hits"`
	// Misses are listings of a visibility class seen for the first time.
	Misses uint64 `json:"cache_misses"`
	// Refreshes are the times the cache was dropped because the
	// registry changed (tools of upstreams appeared or disappeared); its
	// entries are then built again.
	Refreshes uint64 `json:"cache_refreshes"`
	// HitRatePct is Hits over all lookups, in percent (0 before any).
	HitRatePct float64 `json:"hit_rate_pct"`
	// Entries is the number of cached visibility classes.
	Entries int `json:"entries"`
	// BuildMsTotal is the time spent building visible sets (one per
	// miss), in milliseconds; AvgBuildMs is its mean per build.
	BuildMsTotal float64 `json:"build_ms_total"`
	AvgBuildMs   float64 `json:"avg_build_ms"`
	// BuildMaxMs is the longest build since start (the periodic pressure
	// line logs it; /healthz does not show it).
	BuildMaxMs float64 `json:"-"`
}

// maxClasses bounds the cache: beyond it a listing computes its visible
// set without keeping it, so distinct grant sets cannot grow memory.
const maxClasses = 4096

// listCache keeps, per visibility class (the principal's grants, order and
// duplicates aside: two principals with the same grants see the same
// tools), the latest tools the class may see. It sits behind the chain, in
// ToolService, so every transport's listing shares it and visibility is
// decided in one place (interceptors.Visible).
type listCache struct {
	latest []*registry.Tool

	mu      sync.RWMutex
	classes map[string][]*registry.Tool

	*counters
}

// counters outlive a cache: a registry swap drops the entries, not the
// figures.
type counters struct {
	hits, misses atomic.Uint64
	buildNanos   atomic.Int64
	buildMax     atomic.Int64
}

// newListCache returns a cache of latest counting into c (nil: counters
// of its own).
func newListCache(latest []*registry.Tool, c ...*counters) *listCache {
	lc := &listCache{latest: latest, classes: map[string][]*registry.Tool{}, counters: &counters{}}
	if len(c) > 0 && c[0] != nil {
		lc.counters = c[0]
	}
	return lc
}

// visibilityKey is what visibility depends on: the grants, order and
// duplicates aside, and the tool sets the caller sees.
func visibilityKey(p *auth.Principal) string {
	if v := p.View.Key(); v != "" {
		return grantsKey(p) + "\x00" + v
	}
	return grantsKey(p)
}

func grantsKey(p *auth.Principal) string {
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

// visible returns the latest tools p may see. The slice is shared: callers
// must not modify it.
func (c *listCache) visible(p *auth.Principal) []*registry.Tool {
	if p == nil {
		return nil
	}
	key := visibilityKey(p)
	c.mu.RLock()
	vis, ok := c.classes[key]
	c.mu.RUnlock()
	if ok {
		c.hits.Add(1)
		return vis
	}
	c.misses.Add(1)
	start := time.Now()
	vis = make([]*registry.Tool, 0, len(c.latest))
	for _, t := range c.latest {
		if interceptors.Visible(p, t) {
			vis = append(vis, t)
		}
	}
	took := int64(time.Since(start))
	c.buildNanos.Add(took)
	for m := c.buildMax.Load(); took > m && !c.buildMax.CompareAndSwap(m, took); m = c.buildMax.Load() {
	}
	c.mu.Lock()
	if len(c.classes) < maxClasses {
		c.classes[key] = vis
	}
	c.mu.Unlock()
	return vis
}

func (c *listCache) stats() CacheStats {
	s := CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load()}
	if total := s.Hits + s.Misses; total > 0 {
		s.HitRatePct = float64(int(float64(s.Hits)*10000/float64(total))) / 100
	}
	c.mu.RLock()
	s.Entries = len(c.classes)
	c.mu.RUnlock()
	s.BuildMsTotal = float64(c.buildNanos.Load()) / 1e6
	s.BuildMaxMs = float64(c.buildMax.Load()) / 1e6
	if s.Misses > 0 {
		s.AvgBuildMs = s.BuildMsTotal / float64(s.Misses)
	}
	return s
}

// CacheStats returns the figures of the tool-list cache.
func (s *Service) CacheStats() CacheStats {
	st := s.current().list.stats()
	st.Refreshes = s.swaps.Load()
	return st
}
