package store

import (
	"context"
	"time"
)

// IdempotencyRecord is one call made with an idempotency key (docs/CONTRACTS.md:
// "idempotent: calling multiple times = once"): claimed when the call
// starts, completed with its response when it succeeds.
type IdempotencyRecord struct {
	// Principal is whose key it is (tenant and subject): keys of different
	// callers never meet.
	Principal string
	// Key is the caller's idempotency key.
	Key string
	// Tool is the tool called.
	Tool string
	// Fingerprint identifies the call's arguments (a hash of the tool and
	// the canonical request); the same key with another fingerprint is a
	// conflict.
	Fingerprint string
	// Response is the first call's response (protobuf binary); nil while
	// the call is in progress.
	Response []byte
	// Done is true once Response is stored.
	Done bool
	// CreatedAt is when the call was claimed; ExpiresAt when the record
	// stops counting (a claim past it is free again).
	CreatedAt, ExpiresAt time.Time
	// LeaseUntil is how long the claim's owner is known to be alive: it
	// renews the lease (RenewIdempotency) while its call runs, so a claim
	// not done whose lease lapsed was left by an owner that stopped
	// mid-call. A lease earlier than CreatedAt is none (a claim by a
	// release without leases, or the leftover of an earlier claim).
	LeaseUntil time.Time
}

// Leased reports whether r carries a lease of its own claim.
func (r *IdempotencyRecord) Leased() bool {
	return !r.LeaseUntil.Before(r.CreatedAt)
}

// IdempotencyStore keeps the records of keyed calls, in the store so that
// they hold across replicas. Both backends implement it.
type IdempotencyStore interface {
	// ClaimIdempotency inserts r (not done) unless an unexpired record for
	// its principal and key exists. It returns claimed true when r was
	// inserted, otherwise the existing record (an expired one is replaced).
	ClaimIdempotency(ctx context.Context, r *IdempotencyRecord) (existing *IdempotencyRecord, claimed bool, err error)
	// RenewIdempotency extends the lease of a claimed record that is not
	// done to until.
	RenewIdempotency(ctx context.Context, principal, key string, until time.Time) error
	// CompleteIdempotency stores the response of a claimed record.
	CompleteIdempotency(ctx context.Context, principal, key string, response []byte) error
	// ReleaseIdempotency deletes a record that is not done, so that the key
	// can be used again (the call failed before it could have had an effect).
	ReleaseIdempotency(ctx context.Context, principal, key string) error
	// PurgeIdempotency deletes the records that expired before now and
	// returns how many.
	PurgeIdempotency(ctx context.Context, now time.Time) (int64, error)
}
