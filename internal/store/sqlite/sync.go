package sqlite

import (
	"context"
	"database/sql"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// RecordSyncRun implements store.SyncStore.
func (s *Store) RecordSyncRun(ctx context.Context, r *store.SyncRun) error {
	failed, err := backend.PrepareSyncRun(r, backend.Now())
	if err != nil {
		return err
	}
	leave, err := s.writeTurn(ctx, "RecordSyncRun")
	if err != nil {
		return err
	}
	defer leave()
	err = s.writer.QueryRowContext(ctx, `INSERT INTO sync_runs (tenant, started_at, duration_ms, added, updated,
		deleted, unchanged, failures, failed_items, forced) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		r.Tenant, r.StartedAt.UnixMicro(), r.DurationMs, r.Added, r.Updated, r.Deleted, r.Unchanged, r.Failures,
		failed, r.Forced).Scan(&r.ID)
	return s.fail(ctx, "RecordSyncRun", err)
}

// syncStatsSQL reads a tenant's totals and its latest run in one statement,
// so both come from one snapshot without a BEGIN and ROLLBACK of their own;
// the run's columns are NULL (has_run 0) before the first run.
const syncStatsSQL = `SELECT t.n, t.items, t.avg, r.id IS NOT NULL, coalesce(r.id, 0), coalesce(r.tenant, ''),
	coalesce(r.started_at, 0), coalesce(r.duration_ms, 0), coalesce(r.added, 0), coalesce(r.updated, 0),
	coalesce(r.deleted, 0), coalesce(r.unchanged, 0), coalesce(r.failures, 0), coalesce(r.failed_items, '[]'),
	coalesce(r.forced, 0)
	FROM (SELECT count(*) AS n, coalesce(sum(added + updated), 0) AS items, coalesce(avg(duration_ms), 0) AS avg
		FROM sync_runs WHERE tenant = ?) AS t
	LEFT JOIN (SELECT * FROM sync_runs WHERE tenant = ? ORDER BY started_at DESC, id DESC LIMIT 1) AS r ON 1`

// SyncStats implements store.SyncStore. One statement reads one snapshot.
func (s *Store) SyncStats(ctx context.Context, tenant string) (store.SyncStats, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return store.SyncStats{}, err
	}
	q, err := s.readerStmts.stmt(ctx, syncStatsSQL)
	if err != nil {
		return store.SyncStats{}, s.fail(ctx, "SyncStats", err)
	}
	var (
		st      store.SyncStats
		r       store.SyncRun
		hasRun  bool
		started int64
		failed  []byte
	)
	leave, err := s.readTurn(ctx, "SyncStats")
	if err != nil {
		return store.SyncStats{}, err
	}
	err = q.QueryRowContext(ctx, tenant, tenant).Scan(&st.TotalSyncs, &st.TotalItemsSynced, &st.AvgDurationMs,
		&hasRun, &r.ID, &r.Tenant, &started, &r.DurationMs, &r.Added, &r.Updated, &r.Deleted, &r.Unchanged,
		&r.Failures, &failed, &r.Forced)
	leave()
	if err != nil {
		return store.SyncStats{}, s.fail(ctx, "SyncStats", err)
	}
	if !hasRun {
		return st, nil
	}
	r.StartedAt = backend.FromMicros(started)
	if r.FailedItems, err = backend.DecodeFailures(failed); err != nil {
		return store.SyncStats{}, s.fail(ctx, "SyncStats", err)
	}
	st.LastRun = &r
	return st, nil
}

// AppendItemVersion implements store.SyncStore. Numbering happens inside the
// writer's IMMEDIATE transaction, so it is gapless and unique even across
// processes.
func (s *Store) AppendItemVersion(ctx context.Context, v *store.ItemVersion) error {
	if err := backend.PrepareItemVersion(v, backend.Now()); err != nil {
		return err
	}
	return s.writeTx(ctx, "AppendItemVersion", func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO item_versions (tenant, item_id, version, hash, change, author, message, at)
			SELECT ?, ?, coalesce(max(version), 0) + 1, ?, ?, ?, ?, ? FROM item_versions WHERE tenant = ? AND item_id = ?
			RETURNING version`,
			v.Tenant, v.ItemID, v.Hash, v.Change, v.Author, v.Message, v.At.UnixMicro(), v.Tenant, v.ItemID).Scan(&v.Version)
		return s.fail(ctx, "AppendItemVersion", err)
	})
}

// ItemHistory implements store.SyncStore.
func (s *Store) ItemHistory(ctx context.Context, tenant, itemID string) ([]store.ItemVersion, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return nil, err
	}
	leave, err := s.readTurn(ctx, "ItemHistory")
	if err != nil {
		return nil, err
	}
	defer leave()
	rows, err := s.reader.QueryContext(ctx, `SELECT tenant, item_id, version, hash, change, author, message, at
		FROM item_versions WHERE tenant = ? AND item_id = ? ORDER BY version`, tenant, itemID)
	if err != nil {
		return nil, s.fail(ctx, "ItemHistory", err)
	}
	defer rows.Close()
	out := []store.ItemVersion{}
	for rows.Next() {
		var (
			v  store.ItemVersion
			at int64
		)
		if err := rows.Scan(&v.Tenant, &v.ItemID, &v.Version, &v.Hash, &v.Change, &v.Author, &v.Message, &at); err != nil {
			return nil, s.fail(ctx, "ItemHistory", err)
		}
		v.At = backend.FromMicros(at)
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "ItemHistory", err)
	}
	return out, nil
}
