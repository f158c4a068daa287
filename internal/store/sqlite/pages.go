package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// SaveResultPages implements store.PageStore.
func (s *Store) SaveResultPages(ctx context.Context, p *store.ResultPages) error {
	const op = "SaveResultPages"
	if p.CreatedAt.IsZero() {
		p.CreatedAt = backend.Now()
	}
	leave, err := s.writeTurn(ctx, op)
	if err != nil {
		return err
	}
	defer leave()
	_, err = s.writer.ExecContext(ctx, `INSERT INTO result_pages (id, principal, query, items, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?)`, p.ID, p.Principal, p.Query, p.Items, p.CreatedAt.UnixMicro(), p.ExpiresAt.UnixMicro())
	return s.fail(ctx, op, err)
}

// ResultPages implements store.PageStore.
func (s *Store) ResultPages(ctx context.Context, id string, now time.Time) (*store.ResultPages, error) {
	const op = "ResultPages"
	leave, err := s.readTurn(ctx, op)
	if err != nil {
		return nil, err
	}
	defer leave()
	p := store.ResultPages{ID: id}
	var created, expires int64
	err = s.reader.QueryRowContext(ctx, `SELECT principal, query, items, created_at, expires_at
		FROM result_pages WHERE id = ? AND expires_at > ?`, id, now.UnixMicro()).
		Scan(&p.Principal, &p.Query, &p.Items, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	p.CreatedAt, p.ExpiresAt = backend.FromMicros(created), backend.FromMicros(expires)
	return &p, nil
}

// PurgeResultPages implements store.PageStore.
func (s *Store) PurgeResultPages(ctx context.Context, now time.Time) (int64, error) {
	const op = "PurgeResultPages"
	leave, err := s.writeTurn(ctx, op)
	if err != nil {
		return 0, err
	}
	defer leave()
	res, err := s.writer.ExecContext(ctx, `DELETE FROM result_pages WHERE expires_at <= ?`, now.UnixMicro())
	if err != nil {
		return 0, s.fail(ctx, op, err)
	}
	n, _ := res.RowsAffected()
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
