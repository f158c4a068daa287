package sqlite

import (
	"context"
	"database/sql"
)

// gate hands out the connections of a pool in arrival order. database/sql
// gives a freed connection to a random waiter, so under load some calls
// waited many times longer than the rest: the soak's p99 reached 1.8 s,
// and calls timed out, while the median waited milliseconds. Every use of
// a pool first takes a turn at its gate, which holds as many turns as the
// pool has connections: the pool then never has waiters, and callers wait
// in the gate, first come first served (a channel's blocked senders are
// woken in order), so a wait is bounded by the queue ahead of it.
type gate chan struct{}

func newGate(conns int) gate { return make(gate, conns) }

// enter waits for a turn, or for ctx to end. The caller calls leave once
// it no longer uses the connection (after closing its rows or ending its
// transaction).
func (g gate) enter(ctx context.Context) (leave func(), err error) {
	select {
	case g <- struct{}{}:
		return g.leave, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g gate) leave() { <-g }

// readTurn is a turn for one of the reader connections.
func (s *Store) readTurn(ctx context.Context, op string) (func(), error) {
	leave, err := s.readers.enter(ctx)
	return leave, s.fail(ctx, op, err)
}

// writeTurn is a turn for the writer connection.
func (s *Store) writeTurn(ctx context.Context, op string) (func(), error) {
	leave, err := s.writers.enter(ctx)
	return leave, s.fail(ctx, op, err)
}

// readTx begins a read-only transaction on a reader connection, once the
// caller's turn has come; end rolls it back and gives the turn up.
func (s *Store) readTx(ctx context.Context, op string) (tx *sql.Tx, end func(), err error) {
	leave, err := s.readTurn(ctx, op)
	if err != nil {
		return nil, nil, err
	}
	tx, err = s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		leave()
		return nil, nil, s.fail(ctx, op, err)
	}
	return tx, func() { _ = tx.Rollback(); leave() }, nil
}
