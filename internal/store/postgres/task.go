package postgres

import (
	"context"
	"github.com/toolsvc/toolsvc/internal/base/mcptask"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

var _ mcptask.Store = (*Store)(nil)

// CreateTask implements mcptask.Store in one transaction, serialised
// per owner by an advisory lock so that two replicas never both take the
// owner's last place.
func (s *Store) CreateTask(ctx context.Context, r *mcptask.Record, perOwner int, expiredBefore time.Time) (bool, error) {
	const op = "CreateTask"
	created := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('toolsvc.mcp_tasks:' || $1::text, 0))`, r.Owner); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mcp_tasks WHERE owner = $1 AND status <> 'working' AND created_at < $2`,
			r.Owner, expiredBefore); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM mcp_tasks WHERE owner = $1`, r.Owner).Scan(&n); err != nil {
			return err
		}
		for ; n >= perOwner; n-- {
			tag, err := tx.Exec(ctx, `DELETE FROM mcp_tasks WHERE id = (SELECT id FROM mcp_tasks
				WHERE owner = $1 AND status <> 'working' ORDER BY created_at LIMIT 1)`, r.Owner)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return nil // all of them running
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO mcp_tasks (id, owner, replica, status, message, created_at, updated_at, lease_until)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, r.ID, r.Owner, r.Replica, r.Status, r.Message,
			r.CreatedAt, r.UpdatedAt, r.LeaseUntil); err != nil {
			return err
		}
		created = true
		return nil
	})
	if err != nil {
		return false, s.fail(ctx, op, err)
	}
	return created, nil
}

// GetTask implements mcptask.Store.
func (s *Store) GetTask(ctx context.Context, id string) (*mcptask.Record, error) {
	var r mcptask.Record
	err := s.pool.QueryRow(ctx, `SELECT owner, replica, status, message, result, error, cancel_requested,
		created_at, updated_at, lease_until FROM mcp_tasks WHERE id = $1`, id).
		Scan(&r.Owner, &r.Replica, &r.Status, &r.Message, &r.Result, &r.Error, &r.CancelRequested, &r.CreatedAt, &r.UpdatedAt, &r.LeaseUntil)
	if noRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail(ctx, "GetTask", err)
	}
	r.ID = id
	r.CreatedAt, r.UpdatedAt, r.LeaseUntil = backend.Normalize(r.CreatedAt), backend.Normalize(r.UpdatedAt), backend.Normalize(r.LeaseUntil)
	return &r, nil
}

// ProgressTask implements mcptask.Store.
func (s *Store) ProgressTask(ctx context.Context, id, message string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE mcp_tasks SET message = $2, updated_at = $3 WHERE id = $1 AND status = 'working'`, id, message, at)
	return s.fail(ctx, "ProgressTask", err)
}

// FinishTask implements mcptask.Store.
func (s *Store) FinishTask(ctx context.Context, r *mcptask.Record) error {
	_, err := s.pool.Exec(ctx, `UPDATE mcp_tasks SET status = $3, message = $4, result = $5, error = $6, updated_at = $7
		WHERE id = $1 AND replica = $2 AND status = 'working'`, r.ID, r.Replica, r.Status, r.Message, r.Result, r.Error, r.UpdatedAt)
	return s.fail(ctx, "FinishTask", err)
}

// RenewTasks implements mcptask.Store.
func (s *Store) RenewTasks(ctx context.Context, replica string, leaseUntil time.Time) ([]string, error) {
	rows, err := s.pool.Query(ctx, `UPDATE mcp_tasks SET lease_until = $2 WHERE replica = $1 AND status = 'working'
		RETURNING id, cancel_requested`, replica, leaseUntil)
	if err != nil {
		return nil, s.fail(ctx, "RenewTasks", err)
	}
	var cancel []string
	var (
		id        string
		requested bool
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &requested}, func() error {
		if requested {
			cancel = append(cancel, id)
		}
		return nil
	})
	return cancel, s.fail(ctx, "RenewTasks", err)
}

// CancelTask implements mcptask.Store.
func (s *Store) CancelTask(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `UPDATE mcp_tasks SET cancel_requested = true WHERE id = $1 AND status = 'working'`, id)
	return s.fail(ctx, "CancelTask", err)
}

// FailLostTasks implements mcptask.Store.
func (s *Store) FailLostTasks(ctx context.Context, now time.Time, message string, errJSON []byte) (int64, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE mcp_tasks SET status = 'failed', message = $2, error = $3, updated_at = $1
		WHERE status = 'working' AND lease_until < $1`, now, message, errJSON)
	if err != nil {
		return 0, s.fail(ctx, "FailLostTasks", err)
	}
	return tag.RowsAffected(), nil
}

// PurgeTasks implements mcptask.Store.
func (s *Store) PurgeTasks(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM mcp_tasks WHERE status <> 'working' AND created_at < $1`, before)
	if err != nil {
		return 0, s.fail(ctx, "PurgeTasks", err)
	}
	return tag.RowsAffected(), nil
}
