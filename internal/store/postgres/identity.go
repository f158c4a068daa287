package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

var (
	_ store.SigningKeyStore     = (*Store)(nil)
	_ store.UserCredentialStore = (*Store)(nil)
)

// AddSigningKey implements store.SigningKeyStore.
func (s *Store) AddSigningKey(ctx context.Context, k *store.SigningKey) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO signing_keys (id, alg, private, not_before, not_after)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`, k.ID, k.Alg, k.Private, k.NotBefore, k.NotAfter)
	return s.fail(ctx, "AddSigningKey", err)
}

// SigningKeys implements store.SigningKeyStore. A concurrent first
// insert of a key is committed by the time this read's snapshot is taken
// when the caller added it first (ON CONFLICT waited for it).
func (s *Store) SigningKeys(ctx context.Context, since time.Time) ([]store.SigningKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, alg, private, not_before, not_after FROM signing_keys
		WHERE not_after > $1 ORDER BY not_before, id`, since)
	if err != nil {
		return nil, s.fail(ctx, "SigningKeys", err)
	}
	var (
		out []store.SigningKey
		k   store.SigningKey
	)
	_, err = pgx.ForEachRow(rows, []any{&k.ID, &k.Alg, &k.Private, &k.NotBefore, &k.NotAfter}, func() error {
		c := k
		c.Private = append([]byte(nil), k.Private...)
		c.NotBefore, c.NotAfter = c.NotBefore.UTC(), c.NotAfter.UTC()
		out = append(out, c)
		return nil
	})
	return out, s.fail(ctx, "SigningKeys", err)
}

// PurgeSigningKeys implements store.SigningKeyStore.
func (s *Store) PurgeSigningKeys(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM signing_keys WHERE not_after < $1`, before)
	if err != nil {
		return 0, s.fail(ctx, "PurgeSigningKeys", err)
	}
	return tag.RowsAffected(), nil
}

// PutUserCredential implements store.UserCredentialStore.
func (s *Store) PutUserCredential(ctx context.Context, c *store.UserCredential) error {
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = backend.Now()
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO user_credentials (tenant, subject, upstream, sealed, key_id, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant, subject, upstream)
		DO UPDATE SET sealed = excluded.sealed, key_id = excluded.key_id, updated_at = excluded.updated_at`,
		c.Tenant, c.Subject, c.Upstream, c.Sealed, c.KeyID, c.UpdatedAt)
	return s.fail(ctx, "PutUserCredential", err)
}

// UserCredential implements store.UserCredentialStore.
func (s *Store) UserCredential(ctx context.Context, tenant, subject, upstream string) (*store.UserCredential, error) {
	c := store.UserCredential{Tenant: tenant, Subject: subject, Upstream: upstream}
	err := s.pool.QueryRow(ctx, `SELECT sealed, key_id, updated_at FROM user_credentials
		WHERE tenant = $1 AND subject = $2 AND upstream = $3`, tenant, subject, upstream).Scan(&c.Sealed, &c.KeyID, &c.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.fail(ctx, "UserCredential", err)
	}
	c.UpdatedAt = c.UpdatedAt.UTC()
	return &c, nil
}

// DeleteUserCredential implements store.UserCredentialStore.
func (s *Store) DeleteUserCredential(ctx context.Context, tenant, subject, upstream string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM user_credentials WHERE tenant = $1 AND subject = $2 AND upstream = $3`,
		tenant, subject, upstream)
	if err != nil {
		return false, s.fail(ctx, "DeleteUserCredential", err)
	}
	return tag.RowsAffected() > 0, nil
}
