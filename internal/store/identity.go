package store

import (
	"context"
	"time"
)

// SigningKey is one key toolsvc signs its identity assertions with
// (docs/OPERATIONS.md, "Identity of callers to upstreams"). Every replica
// of the store reads the same keys, so an assertion one replica signs
// verifies with the key set any replica publishes.
type SigningKey struct {
	// ID is the key's `kid`: the start of the period it signs in, so
	// that replicas making the key of one period at once make one key.
	ID string
	// Alg is the JOSE algorithm ("EdDSA").
	Alg string
	// Private is the private key (an Ed25519 seed for EdDSA).
	Private []byte
	// NotBefore and NotAfter bound when the key signs; it is published
	// from before NotBefore until after NotAfter (the overlap).
	NotBefore, NotAfter time.Time
}

// SigningKeyStore keeps SigningKeys. Both backends implement it.
type SigningKeyStore interface {
	// AddSigningKey stores k unless a key with its ID exists: the first
	// of concurrent writers wins, and the others read its key.
	AddSigningKey(ctx context.Context, k *SigningKey) error
	// SigningKeys returns the keys whose NotAfter is after since, the
	// oldest first.
	SigningKeys(ctx context.Context, since time.Time) ([]SigningKey, error)
	// PurgeSigningKeys deletes the keys whose NotAfter is before before
	// and returns how many.
	PurgeSigningKeys(ctx context.Context, before time.Time) (int64, error)
}

// UserCredential is a caller's own credential for one upstream (a
// personal access token), sealed by the caller of the store: the store
// keeps only ciphertext and never gives it to anyone but toolsvc's
// forwarding of that caller's calls to that upstream.
type UserCredential struct {
	// Tenant and Subject are whose credential it is; Upstream the
	// upstream it is for.
	Tenant, Subject, Upstream string
	// Sealed is the ciphertext; KeyID names the operator key that sealed
	// it, so that a rotated key still opens the old ones.
	Sealed []byte
	KeyID  string
	// UpdatedAt is when it was last stored.
	UpdatedAt time.Time
}

// UserCredentialStore keeps UserCredentials. Both backends implement it.
type UserCredentialStore interface {
	// PutUserCredential stores c, replacing the one of the same tenant,
	// subject and upstream.
	PutUserCredential(ctx context.Context, c *UserCredential) error
	// UserCredential returns the stored credential, or ErrNotFound.
	UserCredential(ctx context.Context, tenant, subject, upstream string) (*UserCredential, error)
	// DeleteUserCredential deletes it and reports whether there was one.
	DeleteUserCredential(ctx context.Context, tenant, subject, upstream string) (bool, error)
}
