package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

var _ store.VectorStore = (*Store)(nil)

// SetVectors implements store.VectorStore in one batch. The insert selects
// the memory by tenant, id and content, so a vector of content the memory
// no longer has is not stored.
func (s *Store) SetVectors(ctx context.Context, vs []store.MemoryVector) ([]bool, error) {
	batch := &pgx.Batch{}
	for i, v := range vs {
		if err := backend.RequireTenant(v.Tenant); err != nil {
			return nil, err
		}
		if v.Model == "" {
			return nil, fmt.Errorf("store: SetVectors: vector %d has no model", i)
		}
		b, err := store.EncodeVector(v.Vec)
		if err != nil {
			return nil, err
		}
		batch.Queue(`INSERT INTO memory_vectors (tenant, id, model, vec)
			SELECT tenant, id, $1, $2 FROM memories WHERE tenant = $3 AND id = $4 AND content = $5
			ON CONFLICT (tenant, id) DO UPDATE SET model = excluded.model, vec = excluded.vec`,
			v.Model, b, v.Tenant, v.ID, v.Content)
	}
	stored := make([]bool, len(vs))
	if len(vs) == 0 {
		return stored, nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, s.fail(ctx, "SetVectors", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	res := tx.SendBatch(ctx, batch)
	for i := range vs {
		tag, err := res.Exec()
		if err != nil {
			_ = res.Close()
			return nil, s.fail(ctx, "SetVectors", err)
		}
		stored[i] = tag.RowsAffected() > 0
	}
	if err := res.Close(); err != nil {
		return nil, s.fail(ctx, "SetVectors", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, s.fail(ctx, "SetVectors", err)
	}
	return stored, nil
}

// PendingVectors implements store.VectorStore, walking the primary key.
func (s *Store) PendingVectors(ctx context.Context, model string, after store.VectorCursor, limit int) ([]store.Memory, error) {
	limit = min(max(limit, 1), 1000)
	rows, err := s.pool.Query(ctx, `SELECT `+memoryColumns+` FROM memories m
		WHERE (m.tenant, m.id) > ($2, $3) AND NOT EXISTS (
			SELECT 1 FROM memory_vectors v WHERE v.tenant = m.tenant AND v.id = m.id AND v.model = $1)
		ORDER BY m.tenant, m.id LIMIT $4`, model, after.Tenant, after.ID, limit)
	if err != nil {
		return nil, s.fail(ctx, "PendingVectors", err)
	}
	return collectMemories(ctx, s, "PendingVectors", rows)
}

func collectMemories(ctx context.Context, s *Store, op string, rows pgx.Rows) ([]store.Memory, error) {
	defer rows.Close()
	var out []store.Memory
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, s.fail(ctx, op, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return out, nil
}

// ScanVectors implements store.VectorStore.
func (s *Store) ScanVectors(ctx context.Context, model string, fn func(store.MemoryVector) error) error {
	rows, err := s.pool.Query(ctx, `SELECT m.tenant, m.id, m.layer, m.scope_id, v.vec
		FROM memory_vectors v JOIN memories m ON m.tenant = v.tenant AND m.id = v.id WHERE v.model = $1`, model)
	if err != nil {
		return s.fail(ctx, "ScanVectors", err)
	}
	defer rows.Close()
	return backend.ScanVectorRows(rows, model, func(err error) error { return s.fail(ctx, "ScanVectors", err) }, fn)
}

// VectorProgress implements store.VectorStore.
func (s *Store) VectorProgress(ctx context.Context, model string) (done, total int, err error) {
	err = s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM memory_vectors WHERE model = $1),
		(SELECT count(*) FROM memories)`, model).Scan(&done, &total)
	if err != nil {
		return 0, 0, s.fail(ctx, "VectorProgress", err)
	}
	return done, total, nil
}

// GetMemories implements store.VectorStore.
func (s *Store) GetMemories(ctx context.Context, tenant string, ids []string) ([]store.Memory, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+memoryColumns+` FROM memories m WHERE m.tenant = $1 AND m.id = ANY($2)`, tenant, ids)
	if err != nil {
		return nil, s.fail(ctx, "GetMemories", err)
	}
	return collectMemories(ctx, s, "GetMemories", rows)
}

var _ store.VectorFeed = (*Store)(nil)

// horizon is the oldest transaction still running: every transaction
// before it has ended, so its rows are all visible to later snapshots.
func (s *Store) horizon(ctx context.Context, op string) (uint64, error) {
	var x string
	if err := s.pool.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text`).Scan(&x); err != nil {
		return 0, s.fail(ctx, op, err)
	}
	n, err := strconv.ParseUint(x, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("store: %s: transaction id %q: %w", op, x, err)
	}
	return n, nil
}

// VectorFeedStart implements store.VectorFeed.
func (s *Store) VectorFeedStart(ctx context.Context) (store.VectorFeedCursor, error) {
	x, err := s.horizon(ctx, "VectorFeedStart")
	return store.VectorFeedCursor{XID: x}, err
}

// VectorChanges implements store.VectorFeed on memory_vector_changes,
// reading only rows of transactions older than the horizon (all ended), in
// (xid, seq) order, so that the cursor never passes a change that commits
// later.
func (s *Store) VectorChanges(ctx context.Context, model string, after store.VectorFeedCursor, limit int) ([]store.MemoryVector, store.VectorFeedCursor, error) {
	limit = min(max(limit, 1), 10_000)
	h, err := s.horizon(ctx, "VectorChanges")
	if err != nil {
		return nil, after, err
	}
	rows, err := s.pool.Query(ctx, `SELECT c.xid::text, c.seq, c.tenant, c.id, m.layer, m.scope_id, v.model, v.vec
		FROM memory_vector_changes c
		LEFT JOIN memories m ON m.tenant = c.tenant AND m.id = c.id
		LEFT JOIN memory_vectors v ON v.tenant = c.tenant AND v.id = c.id
		WHERE (c.xid, c.seq) > ($1::text::xid8, $2) AND c.xid < $3::text::xid8
		ORDER BY c.xid, c.seq LIMIT $4`,
		strconv.FormatUint(after.XID, 10), after.Seq, strconv.FormatUint(h, 10), limit)
	if err != nil {
		return nil, after, s.fail(ctx, "VectorChanges", err)
	}
	defer rows.Close()
	var (
		out  []store.MemoryVector
		last = after
	)
	for rows.Next() {
		var (
			xid          string
			v            store.MemoryVector
			layer, scope *string
			vmodel       *string
			blob         []byte
		)
		if err := rows.Scan(&xid, &last.Seq, &v.Tenant, &v.ID, &layer, &scope, &vmodel, &blob); err != nil {
			return nil, after, s.fail(ctx, "VectorChanges", err)
		}
		if last.XID, err = strconv.ParseUint(xid, 10, 64); err != nil {
			return nil, after, fmt.Errorf("store: VectorChanges: transaction id %q: %w", xid, err)
		}
		v.Model = model
		if layer != nil && vmodel != nil && *vmodel == model {
			v.Layer, v.ScopeID = store.Layer(*layer), *scope
			if v.Vec, err = store.DecodeVector(blob); err != nil {
				return nil, after, fmt.Errorf("store: vector of %s: %w", v.ID, err)
			}
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, after, s.fail(ctx, "VectorChanges", err)
	}
	if len(out) < limit && h > after.XID {
		// Every change before the horizon was read.
		last = store.VectorFeedCursor{XID: h}
	}
	return out, last, nil
}

// PruneVectorFeed implements store.VectorFeed.
func (s *Store) PruneVectorFeed(ctx context.Context, age time.Duration) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM memory_vector_changes WHERE at < now() - $1::interval`, fmt.Sprintf("%d microseconds", age.Microseconds()))
	return s.fail(ctx, "PruneVectorFeed", err)
}
