package store

import (
	"context"
	"slices"
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
	// Tenant is the principal's tenant. Each principal and each tenant
	// has a bounded share of the saved sets (PrincipalPagesShare,
	// TenantPagesShare), so one caller's searches cannot expire another's
	// cursors.
	Tenant string
	// Items are the results, encoded by the tool; the store keeps them
	// opaque.
	Items []byte
	// CreatedAt is when the search ran; ExpiresAt when the cursor stops
	// working.
	CreatedAt, ExpiresAt time.Time
}

// The shares of saved result sets, in bytes (ResultPages.Size). A save
// that takes its principal past PrincipalPagesShare drops that
// principal's own sets, the soonest to expire first; one that takes its
// tenant past TenantPagesShare drops sets of the tenant's principals that
// hold the most, down to an equal share each (max-min fair), so a caller
// within its fair share never loses a set to another's searches. A set
// holds at most a few thousand results (about 200 KB), so a principal
// keeps dozens of cursors working and a tenant four principals' worth.
const (
	PrincipalPagesShare = 8 << 20
	TenantPagesShare    = 32 << 20
)

// Size is what a saved set counts against its shares: its bytes and a
// fixed overhead.
func (p *ResultPages) Size() int {
	return len(p.ID) + len(p.Principal) + len(p.Tenant) + len(p.Query) + len(p.Items) + 64
}

// FairCap is the largest per-principal byte count c such that the
// principals' uses, each cut to min(use, c), fit in total: the water
// level of a max-min fair share. Principals at or under it keep all they
// hold.
func FairCap(uses []int64, total int64) int64 {
	s := slices.Clone(uses)
	slices.Sort(s)
	left := total
	for i, u := range s {
		rest := int64(len(s) - i)
		if u*rest > left {
			return left / rest
		}
		left -= u
	}
	return total // everyone fits: no cap binds
}

// PageStore keeps ResultPages. Both backends implement it.
type PageStore interface {
	// SaveResultPages stores p (its ID must be new), then keeps its
	// principal and tenant within their shares (PrincipalPagesShare).
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
