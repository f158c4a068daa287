package ratelimit

import (
	"container/list"
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// Memory is split into up to maxShards independently locked shards, so that unrelated keys do not contend.
// Each shard holds at least keysPerShard keys: keys hash unevenly to shards, and with small caps that
// unevenness would start evicting well before the total reaches the cap.
const (
	maxShards    = 16
	keysPerShard = 1024
)

// idleSweep is how many least recently used keys each Allow inspects for removal once their window has passed.
// Amortised over calls this keeps idle keys from accumulating without a background goroutine.
const idleSweep = 2

// Memory is an in-process sliding-window-log Limiter. It is exact within one process; replicas each enforce
// their own limit, so use Redis when several replicas must share one. The zero value is not usable; call
// NewMemory.
type Memory struct {
	clock  func() time.Time
	base   time.Time // admissions are stored as offsets from base, which keeps the monotonic clock reading
	seed   maphash.Seed
	shards []memShard
	stats  counters
}

var _ Limiter = (*Memory)(nil)

type memShard struct {
	mu      sync.Mutex
	maxKeys int
	keys    map[string]*list.Element // of *memKey
	lru     list.List                // front is most recently used
}

type memKey struct {
	key    string
	window time.Duration // of the last call, to tell when the key is idle
	log    ring
}

// NewMemory returns an in-process limiter. Options: WithClock, WithMaxKeys.
//
// Keys are kept in least-recently-used order, per shard. Each Allow first drops up to two keys from the
// least recently used end of its shard whose window has passed, so idle keys go away without a background
// goroutine; at the cap, the least recently used key is dropped whether idle or not. With the default cap
// of 100,000 there are 16 shards of 6,250 keys; caps below 2,048 use a single shard, an exact LRU.
func NewMemory(opts ...Option) *Memory {
	o := newOptions(opts)
	n := min(maxShards, max(1, o.maxKeys/keysPerShard))
	m := &Memory{
		clock:  o.clock,
		base:   o.clock(),
		seed:   maphash.MakeSeed(),
		shards: make([]memShard, n),
	}
	for i := range m.shards {
		// Spread the cap exactly, so the total never exceeds maxKeys.
		m.shards[i].maxKeys = o.maxKeys / n
		if i < o.maxKeys%n {
			m.shards[i].maxKeys++
		}
		m.shards[i].keys = make(map[string]*list.Element)
	}
	return m
}

// Allow implements Limiter. It never fails except for an invalid Limit.
func (m *Memory) Allow(_ context.Context, key string, l Limit) (Decision, error) {
	if err := l.Validate(); err != nil {
		return Decision{}, err
	}
	now := int64(m.clock().Sub(m.base))
	s := &m.shards[maphash.String(m.seed, key)%uint64(len(m.shards))]

	s.mu.Lock()
	k := s.get(key, now, &m.stats)
	k.window = l.Window
	d := k.log.admit(now, l)
	s.mu.Unlock()

	m.stats.record(d)
	return d, nil
}

// Len returns the number of keys currently tracked.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.keys)
		s.mu.Unlock()
	}
	return n
}

// Stats returns a snapshot of the counters.
func (m *Memory) Stats() Stats { return m.stats.snapshot() }

// Close implements Limiter; Memory holds no resources.
func (m *Memory) Close() error { return nil }

// get returns the entry for key, creating it and making room when needed. It must be called with s.mu held.
func (s *memShard) get(key string, now int64, c *counters) *memKey {
	for range idleSweep {
		back := s.lru.Back()
		if back == nil || !back.Value.(*memKey).idle(now) {
			break
		}
		s.remove(back)
	}
	if e, ok := s.keys[key]; ok {
		s.lru.MoveToFront(e)
		return e.Value.(*memKey)
	}
	for len(s.keys) >= s.maxKeys {
		back := s.lru.Back()
		if !back.Value.(*memKey).idle(now) {
			c.evictions.Add(1)
		}
		s.remove(back)
	}
	k := &memKey{key: key}
	s.keys[key] = s.lru.PushFront(k)
	return k
}

func (s *memShard) remove(e *list.Element) {
	delete(s.keys, e.Value.(*memKey).key)
	s.lru.Remove(e)
}

// idle reports whether every admission of k has left its window, so dropping k loses nothing.
func (k *memKey) idle(now int64) bool {
	return k.log.n == 0 || k.log.newest() <= now-int64(k.window)
}

// ring is the admission log of one key: the times (offsets in nanoseconds) of the most recent admissions,
// oldest first. It holds at most Limit.Max entries because only the newest Max admissions can decide whether
// the next call fits, and it grows on demand so a key used once costs a few bytes, not Max × 8.
type ring struct {
	buf     []int64
	head, n int
}

// admit applies l at time now and records the call when it is admitted.
func (r *ring) admit(now int64, l Limit) Decision {
	// An admission at t counts while now < t+Window, so at exactly t+Window it has left the window.
	cutoff := now - int64(l.Window)
	for r.n > 0 && r.at(0) <= cutoff {
		r.pop()
	}
	for r.n > l.Max { // the limit for this key was lowered since the last call
		r.pop()
	}
	if r.n < l.Max {
		r.push(now, l.Max)
		return Decision{Allowed: true, Remaining: l.Max - r.n}
	}
	return Decision{RetryAfter: time.Duration(r.at(0) - cutoff)}
}

func (r *ring) at(i int) int64 { return r.buf[(r.head+i)%len(r.buf)] }

func (r *ring) newest() int64 { return r.at(r.n - 1) }

func (r *ring) pop() {
	r.head = (r.head + 1) % len(r.buf)
	r.n--
}

func (r *ring) push(v int64, limit int) {
	if r.n == len(r.buf) {
		buf := make([]int64, min(max(2*len(r.buf), 4), limit))
		for i := range r.n {
			buf[i] = r.at(i)
		}
		r.buf, r.head = buf, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = v
	r.n++
}
