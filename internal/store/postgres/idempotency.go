package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// ClaimIdempotency implements store.IdempotencyStore in one statement: an
// expired record is replaced, a live one is left as is and returned, so two
// callers (on any replica) never both claim one key.
func (s *Store) ClaimIdempotency(ctx context.Context, r *store.IdempotencyRecord) (*store.IdempotencyRecord, bool, error) {
	if r.CreatedAt.IsZero() {
		r.CreatedAt = backend.Now()
	}
	var (
		e       store.IdempotencyRecord
		claimed bool
	)
	// The upsert writes only over an expired row. When it writes nothing
	// (ON CONFLICT waited for a concurrent claim to commit), the live row
	// is read by the next statement, whose snapshot sees it.
	var lease *time.Time
	if !r.LeaseUntil.IsZero() {
		lease = &r.LeaseUntil
	}
	err := s.pool.QueryRow(ctx, `INSERT INTO idempotency_keys AS k (principal, key, tool, fingerprint, created_at, expires_at, lease_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (principal, key) DO UPDATE SET tool = excluded.tool, fingerprint = excluded.fingerprint,
			response = NULL, done = false, created_at = excluded.created_at, expires_at = excluded.expires_at,
			lease_until = excluded.lease_until
			WHERE k.expires_at <= excluded.created_at
		RETURNING true`, r.Principal, r.Key, r.Tool, r.Fingerprint, r.CreatedAt, r.ExpiresAt, lease).Scan(&claimed)
	if err == nil && claimed {
		return nil, true, nil
	}
	if err != nil && !noRows(err) {
		return nil, false, s.fail(ctx, "ClaimIdempotency", err)
	}
	var leased *time.Time
	err = s.pool.QueryRow(ctx, `SELECT tool, fingerprint, response, done, created_at, expires_at, lease_until
		FROM idempotency_keys WHERE principal = $1 AND key = $2`, r.Principal, r.Key).
		Scan(&e.Tool, &e.Fingerprint, &e.Response, &e.Done, &e.CreatedAt, &e.ExpiresAt, &leased)
	if err != nil {
		return nil, false, s.fail(ctx, "ClaimIdempotency", err)
	}
	e.Principal, e.Key = r.Principal, r.Key
	e.CreatedAt, e.ExpiresAt = backend.Normalize(e.CreatedAt), backend.Normalize(e.ExpiresAt)
	if leased != nil {
		e.LeaseUntil = backend.Normalize(*leased)
	}
	return &e, false, nil
}

// RenewIdempotency implements store.IdempotencyStore.
func (s *Store) RenewIdempotency(ctx context.Context, principal, key string, until time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET lease_until = $3 WHERE principal = $1 AND key = $2 AND NOT done`,
		principal, key, until)
	return s.fail(ctx, "RenewIdempotency", err)
}

// CompleteIdempotency implements store.IdempotencyStore.
func (s *Store) CompleteIdempotency(ctx context.Context, principal, key string, response []byte) error {
	if response == nil {
		response = []byte{}
	}
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET response = $3, done = true WHERE principal = $1 AND key = $2`,
		principal, key, response)
	return s.fail(ctx, "CompleteIdempotency", err)
}

// ReleaseIdempotency implements store.IdempotencyStore.
func (s *Store) ReleaseIdempotency(ctx context.Context, principal, key string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE principal = $1 AND key = $2 AND NOT done`, principal, key)
	return s.fail(ctx, "ReleaseIdempotency", err)
}

// PurgeIdempotency implements store.IdempotencyStore.
func (s *Store) PurgeIdempotency(ctx context.Context, now time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, s.fail(ctx, "PurgeIdempotency", err)
	}
	return tag.RowsAffected(), nil
}

func noRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
