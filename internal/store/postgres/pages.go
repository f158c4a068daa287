package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// SaveResultPages implements store.PageStore.
func (s *Store) SaveResultPages(ctx context.Context, p *store.ResultPages) error {
	if p.CreatedAt.IsZero() {
		p.CreatedAt = backend.Now()
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO result_pages (id, principal, query, items, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, p.ID, p.Principal, p.Query, p.Items, p.CreatedAt, p.ExpiresAt)
	return s.fail(ctx, "SaveResultPages", err)
}

// ResultPages implements store.PageStore.
func (s *Store) ResultPages(ctx context.Context, id string, now time.Time) (*store.ResultPages, error) {
	p := store.ResultPages{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT principal, query, items, created_at, expires_at
		FROM result_pages WHERE id = $1 AND expires_at > $2`, id, now).
		Scan(&p.Principal, &p.Query, &p.Items, &p.CreatedAt, &p.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.fail(ctx, "ResultPages", err)
	}
	p.CreatedAt, p.ExpiresAt = p.CreatedAt.UTC(), p.ExpiresAt.UTC()
	return &p, nil
}

// PurgeResultPages implements store.PageStore.
func (s *Store) PurgeResultPages(ctx context.Context, now time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM result_pages WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, s.fail(ctx, "PurgeResultPages", err)
	}
	return tag.RowsAffected(), nil
}

// CursorKey implements store.PageStore. The insert and the read are two
// statements: a concurrent first insert is committed by the time the
// read's snapshot is taken (ON CONFLICT waited for it).
func (s *Store) CursorKey(ctx context.Context) ([]byte, error) {
	if _, err := s.pool.Exec(ctx, `INSERT INTO secrets (name, value) VALUES ('cursor', $1) ON CONFLICT (name) DO NOTHING`,
		backend.NewSecret()); err != nil {
		return nil, s.fail(ctx, "CursorKey", err)
	}
	var key []byte
	if err := s.pool.QueryRow(ctx, `SELECT value FROM secrets WHERE name = 'cursor'`).Scan(&key); err != nil {
		return nil, s.fail(ctx, "CursorKey", err)
	}
	return key, nil
}
