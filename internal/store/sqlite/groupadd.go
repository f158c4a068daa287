package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// addGroup commits concurrent AddMemory calls together: each call queues
// its memory, then waits for the writer's turn (gate.go, first come first
// served); the call whose turn comes first inserts every memory queued by
// then in one transaction, each behind a savepoint so that one memory's
// conflict fails that memory alone, and commits once. The others find
// their memory stored when their turn comes, and give the turn up at
// once. Under concurrent writes one commit, and its fsync, serves several
// memories; a write alone is one transaction of one memory, as before. A
// memory is stored at most once and only while its call waits: a call
// whose context ends while its memory is still queued takes it back.
type addGroup struct {
	mu      sync.Mutex
	pending []*addCall
}

// addCall is one queued AddMemory.
type addCall struct {
	m    *store.Memory
	p    backend.PreparedMemory
	now  int64
	err  error
	done chan struct{}
	// taken is set, under addGroup.mu, once a turn holder took the call.
	taken bool
}

// addMemory runs AddMemory's write through the group (see addGroup).
func (s *Store) addMemory(ctx context.Context, m *store.Memory, p backend.PreparedMemory, now int64) error {
	c := &addCall{m: m, p: p, now: now, done: make(chan struct{})}
	g := &s.adds
	g.mu.Lock()
	g.pending = append(g.pending, c)
	g.mu.Unlock()

	// Prepared before the turn: preparing needs the writer's connection.
	insStmt, err := s.writerStmts.stmt(ctx, insertMemorySQL)
	if err == nil {
		_, err = s.writerStmts.stmt(ctx, insertTagSQL)
	}
	var leave func()
	if err == nil {
		leave, err = s.writeTurn(ctx, "AddMemory")
	}
	if err == nil && ctx.Err() != nil {
		// The gate may hand a turn to a call already cancelled.
		leave()
		err = ctx.Err()
	}
	if err != nil {
		g.mu.Lock()
		if !c.taken {
			g.pending = slices.DeleteFunc(g.pending, func(x *addCall) bool { return x == c })
			g.mu.Unlock()
			return s.fail(ctx, "AddMemory", err)
		}
		g.mu.Unlock()
		// A turn holder is writing it: its outcome is the call's.
		<-c.done
		return c.err
	}
	defer leave()
	g.mu.Lock()
	batch := g.pending
	g.pending = nil
	for _, x := range batch {
		x.taken = true
	}
	g.mu.Unlock()
	if len(batch) > 0 {
		// The batch is written for every caller in it: one caller's
		// cancellation must not fail the others'.
		s.writeGroup(context.WithoutCancel(ctx), insStmt, batch)
	}
	<-c.done
	return c.err
}

// writeGroup inserts batch in one transaction and sets each call's
// outcome.
func (s *Store) writeGroup(ctx context.Context, insStmt *sql.Stmt, batch []*addCall) {
	finish := func(err error) {
		for _, c := range batch {
			if c.err == nil {
				c.err = err
			}
			close(c.done)
		}
	}
	tagStmt, err := s.writerStmts.stmt(ctx, insertTagSQL)
	if err != nil {
		finish(s.fail(ctx, "AddMemory", err))
		return
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		finish(s.fail(ctx, "AddMemory", err))
		return
	}
	ins, tag := tx.StmtContext(ctx, insStmt), tx.StmtContext(ctx, tagStmt)
	alone := len(batch) == 1
	for _, c := range batch {
		if !alone {
			if _, err := tx.ExecContext(ctx, `SAVEPOINT add_memory`); err != nil {
				_ = tx.Rollback()
				finish(s.fail(ctx, "AddMemory", err))
				return
			}
		}
		conflict, err := insertOne(ctx, ins, tag, c)
		if err != nil {
			_ = tx.Rollback()
			finish(s.fail(ctx, "AddMemory", err))
			return
		}
		if conflict {
			c.err = fmt.Errorf("store: AddMemory %s: %w", c.m.ID, store.ErrConflict)
		}
		if alone {
			continue
		}
		steps := []string{`RELEASE add_memory`}
		if conflict {
			steps = []string{`ROLLBACK TO add_memory`, `RELEASE add_memory`}
		}
		for _, q := range steps {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				_ = tx.Rollback()
				finish(s.fail(ctx, "AddMemory", err))
				return
			}
		}
	}
	if alone && batch[0].err != nil {
		_ = tx.Rollback()
		finish(nil)
		return
	}
	if err := tx.Commit(); err != nil {
		finish(s.fail(ctx, "AddMemory", err))
		return
	}
	finish(nil)
}

// insertOne inserts c's memory and its tags with the transaction's
// statements; a duplicate id is a conflict, not an error.
func insertOne(ctx context.Context, ins, tag *sql.Stmt, c *addCall) (conflict bool, err error) {
	m := c.m
	var seq int64
	err = ins.QueryRowContext(ctx, m.Tenant, m.ID, string(m.Layer), m.ScopeID, m.Content,
		c.p.TagsJSON, c.p.MetadataJSON, m.SourceType, nullable(m.KnowledgeItemID),
		m.ContentHash, m.Orphaned, c.now, c.now).Scan(&seq)
	if isUniqueViolation(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	for _, t := range c.p.Tags {
		if _, err := tag.ExecContext(ctx, seq, m.Tenant, t); err != nil {
			return false, err
		}
	}
	return false, nil
}
