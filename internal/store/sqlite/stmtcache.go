package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// stmtCache holds hot statements prepared once on a pool. database/sql keeps
// a prepared copy on each connection that runs one, so SQLite parses a hot
// statement once per connection instead of on every call: parsing SQL was
// about a sixth of a get-sync-status call's CPU. Only statements of constant
// text belong here; built queries (ListAudit's filters) are prepared per call.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  sync.Map // query text -> *sql.Stmt
}

// stmt returns the prepared statement of query, preparing it on first use.
func (c *stmtCache) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := c.m.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.m.Store(query, s)
	return s, nil
}

// close closes every cached statement; the pool closes after it.
func (c *stmtCache) close() error {
	var errs []error
	c.m.Range(func(k, s any) bool {
		errs = append(errs, s.(*sql.Stmt).Close())
		c.m.Delete(k)
		return true
	})
	return errors.Join(errs...)
}
