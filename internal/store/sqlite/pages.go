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
// answered as expired. maxPageBytes bounds the memory: past it, the sets
// that expire first go first.
const maxPageBytes = 64 << 20

type pageMemo struct {
	mu    sync.Mutex
	sets  map[string]*store.ResultPages
	bytes int
}

func pageSize(p *store.ResultPages) int {
	return len(p.ID) + len(p.Principal) + len(p.Query) + len(p.Items) + 64
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
		m.sets = map[string]*store.ResultPages{}
	}
	if _, ok := m.sets[p.ID]; ok {
		return fmt.Errorf("store: SaveResultPages: %w: result set %s exists", store.ErrConflict, p.ID)
	}
	saved := *p
	saved.Items = slices.Clone(p.Items)
	m.sets[p.ID] = &saved
	m.bytes += pageSize(&saved)
	for m.bytes > maxPageBytes {
		var first *store.ResultPages
		for _, x := range m.sets {
			if first == nil || x.ExpiresAt.Before(first.ExpiresAt) {
				first = x
			}
		}
		delete(m.sets, first.ID)
		m.bytes -= pageSize(first)
	}
	return nil
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
	for id, p := range m.sets {
		if !p.ExpiresAt.After(now) {
			delete(m.sets, id)
			m.bytes -= pageSize(p)
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
