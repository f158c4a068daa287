package store

import (
	"context"
	"time"
)

// SyncRun records one knowledge-to-memory synchronisation.
type SyncRun struct {
	// ID is assigned by RecordSyncRun.
	ID     int64
	Tenant string
	// StartedAt defaults to now when zero; stored in UTC.
	StartedAt  time.Time
	DurationMs int64
	// Item counts of the run.
	Added, Updated, Deleted, Unchanged, Failures int
	// FailedItems details the failures.
	FailedItems []SyncFailure
	// Forced reports a full sync that ignored delta detection.
	Forced bool
}

// SyncFailure is one knowledge item a sync run could not process.
type SyncFailure struct {
	ItemID, Path, Reason string
}

// SyncStats summarises a tenant's sync history.
type SyncStats struct {
	// LastRun is the most recently started run, nil before the first.
	LastRun *SyncRun
	// TotalSyncs counts recorded runs.
	TotalSyncs int
	// TotalItemsSynced sums Added+Updated over all runs.
	TotalItemsSynced int
	// AvgDurationMs averages DurationMs over all runs; 0 without runs.
	AvgDurationMs float64
}

// Changes recorded in an ItemVersion.
const (
	ChangeAdded   = "added"
	ChangeUpdated = "updated"
	ChangeRemoved = "removed"
)

// ItemVersion is one entry of a knowledge item's history.
type ItemVersion struct {
	Tenant, ItemID, Hash string
	// Change is ChangeAdded, ChangeUpdated or ChangeRemoved.
	Change          string
	Author, Message string
	// Version is 1-based per (Tenant, ItemID), assigned by the store.
	Version int
	// At defaults to now when zero; stored in UTC.
	At time.Time
}

// SyncStore keeps sync runs and knowledge item histories.
type SyncStore interface {
	// RecordSyncRun stores r and fills its ID (and StartedAt when zero).
	RecordSyncRun(ctx context.Context, r *SyncRun) error
	// SyncStats summarises the tenant's runs.
	SyncStats(ctx context.Context, tenant string) (SyncStats, error)
	// AppendItemVersion stores v with the next version number of its item
	// and fills Version (and At when zero). Concurrent appends for one item
	// get distinct, gapless numbers.
	AppendItemVersion(ctx context.Context, v *ItemVersion) error
	// ItemHistory returns the item's versions, oldest first; an unknown
	// item has an empty history, not ErrNotFound.
	ItemHistory(ctx context.Context, tenant, itemID string) ([]ItemVersion, error)
}
