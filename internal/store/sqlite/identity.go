package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

var (
	_ store.SigningKeyStore     = (*Store)(nil)
	_ store.UserCredentialStore = (*Store)(nil)
)

// AddSigningKey implements store.SigningKeyStore.
func (s *Store) AddSigningKey(ctx context.Context, k *store.SigningKey) error {
	_, err := s.exec(ctx, "AddSigningKey", `INSERT INTO signing_keys (id, alg, private, not_before, not_after)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`, k.ID, k.Alg, k.Private, k.NotBefore.UnixMicro(), k.NotAfter.UnixMicro())
	return err
}

// SigningKeys implements store.SigningKeyStore. It reads on the writer,
// after any key a concurrent writer just added.
func (s *Store) SigningKeys(ctx context.Context, since time.Time) ([]store.SigningKey, error) {
	const op = "SigningKeys"
	leave, err := s.writeTurn(ctx, op)
	if err != nil {
		return nil, err
	}
	defer leave()
	rows, err := s.writer.QueryContext(ctx, `SELECT id, alg, private, not_before, not_after FROM signing_keys
		WHERE not_after > ? ORDER BY not_before, id`, since.UnixMicro())
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	defer rows.Close()
	var out []store.SigningKey
	for rows.Next() {
		var (
			k      store.SigningKey
			nb, na int64
		)
		if err := rows.Scan(&k.ID, &k.Alg, &k.Private, &nb, &na); err != nil {
			return nil, s.fail(ctx, op, err)
		}
		k.NotBefore, k.NotAfter = backend.FromMicros(nb), backend.FromMicros(na)
		out = append(out, k)
	}
	return out, s.fail(ctx, op, rows.Err())
}

// PurgeSigningKeys implements store.SigningKeyStore.
func (s *Store) PurgeSigningKeys(ctx context.Context, before time.Time) (int64, error) {
	return s.exec(ctx, "PurgeSigningKeys", `DELETE FROM signing_keys WHERE not_after < ?`, before.UnixMicro())
}

// PutUserCredential implements store.UserCredentialStore.
func (s *Store) PutUserCredential(ctx context.Context, c *store.UserCredential) error {
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = backend.Now()
	}
	_, err := s.exec(ctx, "PutUserCredential", `INSERT INTO user_credentials (tenant, subject, upstream, sealed, key_id, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, subject, upstream)
		DO UPDATE SET sealed = excluded.sealed, key_id = excluded.key_id, updated_at = excluded.updated_at`,
		c.Tenant, c.Subject, c.Upstream, c.Sealed, c.KeyID, c.UpdatedAt.UnixMicro())
	return err
}

// UserCredential implements store.UserCredentialStore.
func (s *Store) UserCredential(ctx context.Context, tenant, subject, upstream string) (*store.UserCredential, error) {
	const op = "UserCredential"
	leave, err := s.readTurn(ctx, op)
	if err != nil {
		return nil, err
	}
	defer leave()
	c := store.UserCredential{Tenant: tenant, Subject: subject, Upstream: upstream}
	var at int64
	err = s.reader.QueryRowContext(ctx, `SELECT sealed, key_id, updated_at FROM user_credentials
		WHERE tenant = ? AND subject = ? AND upstream = ?`, tenant, subject, upstream).Scan(&c.Sealed, &c.KeyID, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	c.UpdatedAt = backend.FromMicros(at)
	return &c, nil
}

// DeleteUserCredential implements store.UserCredentialStore.
func (s *Store) DeleteUserCredential(ctx context.Context, tenant, subject, upstream string) (bool, error) {
	n, err := s.exec(ctx, "DeleteUserCredential", `DELETE FROM user_credentials WHERE tenant = ? AND subject = ? AND upstream = ?`,
		tenant, subject, upstream)
	return n > 0, err
}
