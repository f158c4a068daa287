package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// ClaimIdempotency implements store.IdempotencyStore: on the one writer
// connection, an expired record is dropped and the claim inserted unless a
// record remains, so two callers never both claim one key.
func (s *Store) ClaimIdempotency(ctx context.Context, r *store.IdempotencyRecord) (*store.IdempotencyRecord, bool, error) {
	const op = "ClaimIdempotency"
	if r.CreatedAt.IsZero() {
		r.CreatedAt = backend.Now()
	}
	leave, err := s.writeTurn(ctx, op)
	if err != nil {
		return nil, false, err
	}
	defer leave()
	now := r.CreatedAt.UnixMicro()
	if _, err := s.writer.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE principal = ? AND key = ? AND expires_at <= ?`,
		r.Principal, r.Key, now); err != nil {
		return nil, false, s.fail(ctx, op, err)
	}
	var lease int64
	if !r.LeaseUntil.IsZero() {
		lease = r.LeaseUntil.UnixMicro()
	}
	res, err := s.writer.ExecContext(ctx, `INSERT INTO idempotency_keys (principal, key, tool, fingerprint, created_at, expires_at, lease_until)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (principal, key) DO NOTHING`,
		r.Principal, r.Key, r.Tool, r.Fingerprint, now, r.ExpiresAt.UnixMicro(), lease)
	if err != nil {
		return nil, false, s.fail(ctx, op, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil, true, nil
	}
	var (
		e                        store.IdempotencyRecord
		created, expires, leased int64
		response                 []byte
	)
	err = s.writer.QueryRowContext(ctx, `SELECT tool, fingerprint, response, done, created_at, expires_at, lease_until
		FROM idempotency_keys WHERE principal = ? AND key = ?`, r.Principal, r.Key).
		Scan(&e.Tool, &e.Fingerprint, &response, &e.Done, &created, &expires, &leased)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, s.fail(ctx, op, errors.New("idempotency record vanished"))
	}
	if err != nil {
		return nil, false, s.fail(ctx, op, err)
	}
	e.Principal, e.Key, e.Response = r.Principal, r.Key, response
	e.CreatedAt, e.ExpiresAt = backend.FromMicros(created), backend.FromMicros(expires)
	if leased != 0 {
		e.LeaseUntil = backend.FromMicros(leased)
	}
	return &e, false, nil
}

// RenewIdempotency implements store.IdempotencyStore.
func (s *Store) RenewIdempotency(ctx context.Context, principal, key string, until time.Time) error {
	leave, err := s.writeTurn(ctx, "RenewIdempotency")
	if err != nil {
		return err
	}
	defer leave()
	_, err = s.writer.ExecContext(ctx, `UPDATE idempotency_keys SET lease_until = ? WHERE principal = ? AND key = ? AND done = 0`,
		until.UnixMicro(), principal, key)
	return s.fail(ctx, "RenewIdempotency", err)
}

// CompleteIdempotency implements store.IdempotencyStore.
func (s *Store) CompleteIdempotency(ctx context.Context, principal, key string, response []byte) error {
	leave, err := s.writeTurn(ctx, "CompleteIdempotency")
	if err != nil {
		return err
	}
	defer leave()
	if response == nil {
		response = []byte{}
	}
	_, err = s.writer.ExecContext(ctx, `UPDATE idempotency_keys SET response = ?, done = 1 WHERE principal = ? AND key = ?`,
		response, principal, key)
	return s.fail(ctx, "CompleteIdempotency", err)
}

// ReleaseIdempotency implements store.IdempotencyStore.
func (s *Store) ReleaseIdempotency(ctx context.Context, principal, key string) error {
	leave, err := s.writeTurn(ctx, "ReleaseIdempotency")
	if err != nil {
		return err
	}
	defer leave()
	_, err = s.writer.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE principal = ? AND key = ? AND done = 0`, principal, key)
	return s.fail(ctx, "ReleaseIdempotency", err)
}

// PurgeIdempotency implements store.IdempotencyStore.
func (s *Store) PurgeIdempotency(ctx context.Context, now time.Time) (int64, error) {
	leave, err := s.writeTurn(ctx, "PurgeIdempotency")
	if err != nil {
		return 0, err
	}
	defer leave()
	res, err := s.writer.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE expires_at <= ?`, now.UnixMicro())
	if err != nil {
		return 0, s.fail(ctx, "PurgeIdempotency", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
