package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// RecordSyncRun implements store.SyncStore.
func (s *Store) RecordSyncRun(ctx context.Context, r *store.SyncRun) error {
	failed, err := backend.PrepareSyncRun(r, backend.Now())
	if err != nil {
		return err
	}
	err = s.pool.QueryRow(ctx, `INSERT INTO sync_runs (tenant, started_at, duration_ms, added, updated, deleted,
		unchanged, failures, failed_items, forced) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
		r.Tenant, r.StartedAt, r.DurationMs, r.Added, r.Updated, r.Deleted, r.Unchanged, r.Failures, failed,
		r.Forced).Scan(&r.ID)
	return s.fail(ctx, "RecordSyncRun", err)
}

// SyncStats implements store.SyncStore in one statement, so the totals and
// the last run come from one snapshot.
func (s *Store) SyncStats(ctx context.Context, tenant string) (store.SyncStats, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return store.SyncStats{}, err
	}
	var (
		st      store.SyncStats
		r       store.SyncRun
		id      *int64
		started *time.Time
		failed  []byte
		// The last-run columns are NULL before the first run.
		durationMs                                   *int64
		added, updated, deleted, unchanged, failures *int
		forced                                       *bool
	)
	err := s.pool.QueryRow(ctx, `SELECT t.total, t.items, t.avg_ms, l.id, l.started_at, l.duration_ms, l.added,
			l.updated, l.deleted, l.unchanged, l.failures, l.failed_items, l.forced
		FROM (SELECT count(*) AS total, coalesce(sum(added + updated), 0) AS items,
				coalesce(avg(duration_ms), 0)::float8 AS avg_ms FROM sync_runs WHERE tenant = $1) AS t
		LEFT JOIN LATERAL (SELECT * FROM sync_runs WHERE tenant = $1 ORDER BY started_at DESC, id DESC LIMIT 1) AS l ON true`,
		tenant).Scan(&st.TotalSyncs, &st.TotalItemsSynced, &st.AvgDurationMs, &id, &started, &durationMs, &added,
		&updated, &deleted, &unchanged, &failures, &failed, &forced)
	if err != nil {
		return store.SyncStats{}, s.fail(ctx, "SyncStats", err)
	}
	if id == nil {
		return st, nil
	}
	r = store.SyncRun{ID: *id, Tenant: tenant, StartedAt: backend.Normalize(*started), DurationMs: *durationMs,
		Added: *added, Updated: *updated, Deleted: *deleted, Unchanged: *unchanged, Failures: *failures, Forced: *forced}
	if r.FailedItems, err = backend.DecodeFailures(failed); err != nil {
		return store.SyncStats{}, s.fail(ctx, "SyncStats", err)
	}
	st.LastRun = &r
	return st, nil
}

// AppendItemVersion implements store.SyncStore. A transaction-scoped
// advisory lock on (tenant, item) serialises concurrent appends for one
// item, across replicas, so numbering is gapless and unique.
func (s *Store) AppendItemVersion(ctx context.Context, v *store.ItemVersion) error {
	if err := backend.PrepareItemVersion(v, backend.Now()); err != nil {
		return err
	}
	return s.inTx(ctx, "AppendItemVersion", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, v.Tenant, v.ItemID); err != nil {
			return s.fail(ctx, "AppendItemVersion", err)
		}
		err := tx.QueryRow(ctx, `INSERT INTO item_versions (tenant, item_id, version, hash, change, author, message, at)
			SELECT $1, $2, coalesce(max(version), 0) + 1, $3, $4, $5, $6, $7 FROM item_versions
			WHERE tenant = $1 AND item_id = $2 RETURNING version`,
			v.Tenant, v.ItemID, v.Hash, v.Change, v.Author, v.Message, v.At).Scan(&v.Version)
		return s.fail(ctx, "AppendItemVersion", err)
	})
}

// ItemHistory implements store.SyncStore.
func (s *Store) ItemHistory(ctx context.Context, tenant, itemID string) ([]store.ItemVersion, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT tenant, item_id, version, hash, change, author, message, at
		FROM item_versions WHERE tenant = $1 AND item_id = $2 ORDER BY version`, tenant, itemID)
	if err != nil {
		return nil, s.fail(ctx, "ItemHistory", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ItemVersion, error) {
		var v store.ItemVersion
		err := r.Scan(&v.Tenant, &v.ItemID, &v.Version, &v.Hash, &v.Change, &v.Author, &v.Message, &v.At)
		v.At = backend.Normalize(v.At)
		return v, err
	})
	if err != nil {
		return nil, s.fail(ctx, "ItemHistory", err)
	}
	if out == nil {
		out = []store.ItemVersion{}
	}
	return out, nil
}
