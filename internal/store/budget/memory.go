package budget

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Memory is a Store for one process. The zero value is not usable: use
// [NewMemory].
type Memory struct {
	now    func() time.Time
	mu     sync.Mutex
	counts map[string]counter
	swept  time.Time
}

type counter struct {
	used    int64
	expires time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an in-process Store; now is its clock (nil: time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, counts: map[string]counter{}}
}

func memKey(key string, start time.Time) string {
	return key + ":" + strconv.FormatInt(start.UnixMilli(), 10)
}

// Spend implements Store.
func (m *Memory) Spend(_ context.Context, charges []Charge) (Outcome, error) {
	now := m.now()
	out := Outcome{Refused: -1, Used: make([]int64, len(charges)), Resets: make([]time.Time, len(charges))}
	keys := make([]string, len(charges))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	for i, c := range charges {
		start := windowStart(now, c.Window)
		keys[i] = memKey(c.Key, start)
		out.Resets[i] = start.Add(c.Window)
		if used := m.counts[keys[i]].used; used+c.Cost > c.Limit && c.Cost > 0 {
			out.Refused, out.Used = i, make([]int64, len(charges))
			out.Used[i] = used
			return out, nil
		}
	}
	for i, c := range charges {
		e := m.counts[keys[i]]
		e.used += c.Cost
		e.expires = out.Resets[i]
		m.counts[keys[i]] = e
		out.Used[i] = e.used
	}
	out.Allowed = true
	return out, nil
}

// Used implements Store.
func (m *Memory) Used(_ context.Context, key string, window time.Duration) (int64, time.Time, error) {
	now := m.now()
	start := windowStart(now, window)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[memKey(key, start)].used, start.Add(window), nil
}

// sweep forgets ended windows, at most once a second; m.mu is held.
func (m *Memory) sweep(now time.Time) {
	if now.Sub(m.swept) < time.Second {
		return
	}
	m.swept = now
	for k, e := range m.counts {
		if !now.Before(e.expires) {
			delete(m.counts, k)
		}
	}
}
