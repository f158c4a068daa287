package sqlite

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// Result sets live in the process's memory, not in the file: a SQLite
// store is one process's (a fleet shares PostgreSQL), and writing every
// search's remaining results into the database lengthened the WAL that
// every search then reads (measured: docs/BENCHMARKS.md, "Design
// measurements"). A cursor brought to another process on the same file is
// answered as expired. maxPageBytes bounds the memory. Within it each
// principal and tenant has its share (store.PrincipalPagesShare): a save
// past a share, or past maxPageBytes, drops sets of whoever holds the most
// (the tenant, then its principal), the soonest to expire first, so one
// caller's flood of searches never expires another caller's cursors.
const maxPageBytes = 64 << 20

type pageMemo struct {
	mu    sync.Mutex
	sets  map[string]*store.ResultPages
	bytes int
	// tenants holds what each tenant's principals keep.
	tenants map[string]*tenantPages
}

// tenantPages is what one tenant keeps.
type tenantPages struct {
	bytes      int
	principals map[string]*principalPages
}

// principalPages is what one principal keeps: its sets, the soonest to
// expire first.
type principalPages struct {
	bytes int
	sets  []*store.ResultPages
}

// SaveResultPages implements store.PageStore.
func (s *Store) SaveResultPages(_ context.Context, p *store.ResultPages) error {
	if p.CreatedAt.IsZero() {
		p.CreatedAt = backend.Now()
	}
	m := &s.pages
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sets == nil {
		m.sets, m.tenants = map[string]*store.ResultPages{}, map[string]*tenantPages{}
	}
	if _, ok := m.sets[p.ID]; ok {
		return fmt.Errorf("store: SaveResultPages: %w: result set %s exists", store.ErrConflict, p.ID)
	}
	saved := *p
	saved.Items = slices.Clone(p.Items)
	m.add(&saved)
	// The new set is never dropped, even when it alone is over a share
	// (a tool bounds its sets well below them).
	t := m.tenants[saved.Tenant]
	own := t.principals[saved.Principal]
	for own.bytes > store.PrincipalPagesShare {
		if !m.dropFirst(own, &saved) {
			break
		}
	}
	for t.bytes > store.TenantPagesShare {
		if !m.dropFirst(largest(t.principals, &saved), &saved) {
			break
		}
	}
	for m.bytes > maxPageBytes {
		var most *tenantPages
		var victim *principalPages
		for _, x := range m.tenants {
			if v := largest(x.principals, &saved); v != nil && (most == nil || x.bytes > most.bytes) {
				most, victim = x, v
			}
		}
		if !m.dropFirst(victim, &saved) {
			break
		}
	}
	return nil
}

// add keeps p and counts it against its principal and tenant.
func (m *pageMemo) add(p *store.ResultPages) {
	t := m.tenants[p.Tenant]
	if t == nil {
		t = &tenantPages{principals: map[string]*principalPages{}}
		m.tenants[p.Tenant] = t
	}
	own := t.principals[p.Principal]
	if own == nil {
		own = &principalPages{}
		t.principals[p.Principal] = own
	}
	// Sets are saved in the order they expire, but for a clock that
	// stepped back: insert in order.
	i := len(own.sets)
	for i > 0 && own.sets[i-1].ExpiresAt.After(p.ExpiresAt) {
		i--
	}
	own.sets = slices.Insert(own.sets, i, p)
	m.sets[p.ID] = p
	n := p.Size()
	m.bytes, t.bytes, own.bytes = m.bytes+n, t.bytes+n, own.bytes+n
}

// remove forgets p, which is kept.
func (m *pageMemo) remove(p *store.ResultPages) {
	t := m.tenants[p.Tenant]
	own := t.principals[p.Principal]
	own.sets = slices.DeleteFunc(own.sets, func(x *store.ResultPages) bool { return x == p })
	delete(m.sets, p.ID)
	n := p.Size()
	m.bytes, t.bytes, own.bytes = m.bytes-n, t.bytes-n, own.bytes-n
	if len(own.sets) == 0 {
		delete(t.principals, p.Principal)
	}
	if len(t.principals) == 0 {
		delete(m.tenants, p.Tenant)
	}
}

// dropFirst drops own's set that expires first, unless that is keep. It
// reports whether it dropped one.
func (m *pageMemo) dropFirst(own *principalPages, keep *store.ResultPages) bool {
	if own == nil || len(own.sets) == 0 || own.sets[0] == keep {
		return false
	}
	m.remove(own.sets[0])
	return true
}

// largest is the principal that keeps the most bytes among those with a
// set to drop (keep is never dropped), or nil.
func largest(principals map[string]*principalPages, keep *store.ResultPages) *principalPages {
	var most *principalPages
	for _, x := range principals {
		if x.sets[0] != keep && (most == nil || x.bytes > most.bytes) {
			most = x
		}
	}
	return most
}

// ResultPages implements store.PageStore.
func (s *Store) ResultPages(_ context.Context, id string, now time.Time) (*store.ResultPages, error) {
	m := &s.pages
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.sets[id]
	if !ok || !p.ExpiresAt.After(now) {
		return nil, store.ErrNotFound
	}
	out := *p
	return &out, nil
}

// PurgeResultPages implements store.PageStore.
func (s *Store) PurgeResultPages(_ context.Context, now time.Time) (int64, error) {
	m := &s.pages
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, p := range m.sets {
		if !p.ExpiresAt.After(now) {
			m.remove(p)
			n++
		}
	}
	return n, nil
}

// CursorKey implements store.PageStore.
func (s *Store) CursorKey(ctx context.Context) ([]byte, error) {
	const op = "CursorKey"
	leave, err := s.writeTurn(ctx, op)
	if err != nil {
		return nil, err
	}
	defer leave()
	if _, err := s.writer.ExecContext(ctx, `INSERT INTO secrets (name, value) VALUES ('cursor', ?) ON CONFLICT (name) DO NOTHING`,
		backend.NewSecret()); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	var key []byte
	if err := s.writer.QueryRowContext(ctx, `SELECT value FROM secrets WHERE name = 'cursor'`).Scan(&key); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return key, nil
}
