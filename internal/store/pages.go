package store

import (
	"context"
	"time"
)

// ResultPages are the results of one search beyond its first page, kept
// so that the search's cursor pages through exactly that result set
// (docs/CONTRACTS.md, "Paging"): ranking depends on the whole store (word
// statistics, near-duplicates), so running the search again for the next
// page could move a result across the page boundary while memories are
// written and deleted. Kept in the store, a cursor works on any replica.
type ResultPages struct {
	// ID is random and unguessable, chosen by the caller.
	ID string
	// Principal is whose search it was; Query the fingerprint of the
	// request without its cursor and limit. The tool checks both.
	Principal, Query string
	// Items are the results, encoded by the tool; the store keeps them
	// opaque.
	Items []byte
	// CreatedAt is when the search ran; ExpiresAt when the cursor stops
	// working.
	CreatedAt, ExpiresAt time.Time
}

// PageStore keeps ResultPages. Both backends implement it.
type PageStore interface {
	// SaveResultPages stores p (its ID must be new).
	SaveResultPages(ctx context.Context, p *ResultPages) error
	// ResultPages returns the unexpired result set id, or ErrNotFound.
	ResultPages(ctx context.Context, id string, now time.Time) (*ResultPages, error)
	// PurgeResultPages deletes the result sets that expired before now and
	// returns how many.
	PurgeResultPages(ctx context.Context, now time.Time) (int64, error)
	// CursorKey is the secret that signs cursors: 32 random bytes made on
	// first use (the first of concurrent callers wins), the same for every
	// replica of the store.
	CursorKey(ctx context.Context) ([]byte, error)
}
