package cache

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Memory is an in-process Cache: an LRU bounded by bytes, honouring each entry's TTL. It is the default when no
// Redis is configured; each replica then has its own cache and its own invalidations.
type Memory struct {
	clock    func() time.Time
	maxBytes int64
	stats    counters

	mu    sync.Mutex
	used  int64
	items map[string]*list.Element // of *memEntry, by Key.String()
	lru   list.List                // front is most recently used
	gens  map[string]uint64        // by domainID; one word per (tenant, domain) ever invalidated
	// sweepAt is where sweep goes on from; nil starts at the back.
	sweepAt *list.Element
}

// sweepBatch is how many entries each Set examines for sweep.
const sweepBatch = 8

var _ Generational = (*Memory)(nil)

type memEntry struct {
	key     string
	domain  string
	gen     uint64
	val     []byte
	expires time.Time
}

// size is what an entry costs against the byte budget: its value and its 64-byte key. Map and list overhead
// (about 200 bytes an entry) is not counted.
func (e *memEntry) size() int64 { return int64(len(e.key) + len(e.val)) }

// NewMemory returns a cache holding at most maxBytes of keys and values; the least recently used entries are
// evicted to make room, and a value larger than maxBytes is not stored. Options: WithClock.
func NewMemory(maxBytes int64, opts ...Option) *Memory {
	o := newOptions(opts)
	return &Memory{
		clock:    o.clock,
		maxBytes: maxBytes,
		items:    make(map[string]*list.Element),
		gens:     make(map[string]uint64),
	}
}

// Get implements Cache. The returned slice is a copy the caller may keep and modify.
func (m *Memory) Get(ctx context.Context, k Key) ([]byte, bool, error) {
	val, _, ok, err := m.Lookup(ctx, k)
	return val, ok, err
}

// Lookup implements Generational.
func (m *Memory) Lookup(_ context.Context, k Key) ([]byte, uint64, bool, error) {
	key, domain := k.String(), domainID(k.Tenant, k.Domain)
	now := m.clock()

	m.mu.Lock()
	gen := m.gens[domain]
	var val []byte
	e, ok := m.items[key]
	if ok {
		ent := e.Value.(*memEntry)
		if ent.gen != gen || !now.Before(ent.expires) {
			m.remove(e)
			ok = false
		} else {
			m.lru.MoveToFront(e)
			val = append([]byte(nil), ent.val...)
		}
	}
	m.mu.Unlock()

	m.stats.lookup(ok)
	return val, gen, ok, nil
}

// Set implements Cache. It copies val.
func (m *Memory) Set(_ context.Context, k Key, val []byte, ttl time.Duration) error {
	_, err := m.set(k, nil, val, ttl)
	return err
}

// SetIfGeneration implements Generational.
func (m *Memory) SetIfGeneration(_ context.Context, k Key, gen uint64, val []byte, ttl time.Duration) (bool, error) {
	return m.set(k, &gen, val, ttl)
}

func (m *Memory) set(k Key, want *uint64, val []byte, ttl time.Duration) (bool, error) {
	if err := validateTTL(ttl); err != nil {
		return false, err
	}
	ent := &memEntry{
		key:     k.String(),
		domain:  domainID(k.Tenant, k.Domain),
		val:     append([]byte(nil), val...),
		expires: m.clock().Add(ttl),
	}
	if ent.size() > m.maxBytes {
		return false, nil
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	ent.gen = m.gens[ent.domain]
	if want != nil && *want != ent.gen {
		return false, nil
	}
	if old, ok := m.items[ent.key]; ok {
		m.remove(old)
	}
	m.items[ent.key] = m.lru.PushFront(ent)
	m.used += ent.size()
	m.evict()
	m.sweep()
	return true, nil
}

// sweep drops dead entries (expired, or of an invalidated generation)
// among the next sweepBatch entries of a cursor that walks the list from
// the least recently used end and starts over. Without it an entry never
// asked for again stayed until the byte budget pushed it out, so a
// service whose queries rarely repeat kept the whole budget filled with
// dead results (the soak's heap grew by the budget); with it the cache
// holds little more than what can still be served, at a cost of a few
// comparisons per Set. It must be called with m.mu held.
func (m *Memory) sweep() {
	now := m.clock()
	e := m.sweepAt
	if e == nil {
		e = m.lru.Back()
	}
	for i := 0; i < sweepBatch && e != nil; i++ {
		next := e.Prev() // nil at the front
		if ent := e.Value.(*memEntry); !now.Before(ent.expires) || ent.gen != m.gens[ent.domain] {
			m.remove(e)
		}
		e = next
	}
	m.sweepAt = e
}

// evict drops least recently used entries until the cache fits its budget. Only dropping an entry that could
// still have been served counts as an eviction. It must be called with m.mu held.
func (m *Memory) evict() {
	now := m.clock()
	for m.used > m.maxBytes {
		e := m.lru.Back()
		if ent := e.Value.(*memEntry); now.Before(ent.expires) && ent.gen == m.gens[ent.domain] {
			m.stats.evictions.Add(1)
		}
		m.remove(e)
	}
}

func (m *Memory) remove(e *list.Element) {
	if m.sweepAt == e {
		m.sweepAt = e.Prev()
	}
	ent := e.Value.(*memEntry)
	delete(m.items, ent.key)
	m.lru.Remove(e)
	m.used -= ent.size()
}

// InvalidateDomain implements Cache.
func (m *Memory) InvalidateDomain(_ context.Context, tenant, domain string) error {
	id := domainID(tenant, domain)
	m.mu.Lock()
	m.gens[id]++
	m.mu.Unlock()
	m.stats.invalidations.Add(1)
	return nil
}

// Len returns the number of entries held, including expired ones not yet dropped.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items)
}

// Bytes returns the bytes held against the budget.
func (m *Memory) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// Stats returns a snapshot of the counters.
func (m *Memory) Stats() Stats { return m.stats.snapshot() }

// Close implements Cache; Memory holds no resources.
func (m *Memory) Close() error { return nil }
