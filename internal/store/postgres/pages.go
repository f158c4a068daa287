package postgres

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// SaveResultPages implements store.PageStore in one transaction,
// serialised per tenant by an advisory lock: it inserts p, then trims the
// principals of p's tenant that are over their share (the soonest to
// expire first), the share being store.PrincipalPagesShare or less, the
// max-min fair part of store.TenantPagesShare. p itself is never trimmed.
// The lock keeps concurrent saves of one tenant from trimming the same
// rows in different orders (deadlocks) or each other's new rows.
func (s *Store) SaveResultPages(ctx context.Context, p *store.ResultPages) error {
	if p.CreatedAt.IsZero() {
		p.CreatedAt = backend.Now()
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('toolsvc.result_pages:' || $1::text, 0))`, p.Tenant); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO result_pages (id, principal, tenant, query, items, size, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, p.ID, p.Principal, p.Tenant, p.Query, p.Items, p.Size(), p.CreatedAt, p.ExpiresAt); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT principal, sum(size) FROM result_pages
			WHERE tenant = $1 AND expires_at > $2 GROUP BY principal`, p.Tenant, p.CreatedAt)
		if err != nil {
			return err
		}
		uses := map[string]int64{}
		var (
			principal string
			used      int64
		)
		if _, err := pgx.ForEachRow(rows, []any{&principal, &used}, func() error {
			uses[principal] = used
			return nil
		}); err != nil {
			return err
		}
		limit := min(int64(store.PrincipalPagesShare), store.FairCap(slices.Collect(maps.Values(uses)), store.TenantPagesShare))
		for principal, used := range uses {
			if used <= limit {
				continue
			}
			// Keep the sets that expire last while they fit in limit.
			if _, err := tx.Exec(ctx, `DELETE FROM result_pages WHERE id IN (
				SELECT id FROM (SELECT id, sum(size) OVER (ORDER BY expires_at DESC, id DESC) AS kept
					FROM result_pages WHERE tenant = $1 AND principal = $2 AND expires_at > $3) r
				WHERE kept > $4 AND id <> $5)`, p.Tenant, principal, p.CreatedAt, limit, p.ID); err != nil {
				return err
			}
		}
		return nil
	})
	return s.fail(ctx, "SaveResultPages", err)
}

// ResultPages implements store.PageStore.
func (s *Store) ResultPages(ctx context.Context, id string, now time.Time) (*store.ResultPages, error) {
	p := store.ResultPages{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT principal, tenant, query, items, created_at, expires_at
		FROM result_pages WHERE id = $1 AND expires_at > $2`, id, now).
		Scan(&p.Principal, &p.Tenant, &p.Query, &p.Items, &p.CreatedAt, &p.ExpiresAt)
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
