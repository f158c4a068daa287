package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

var _ store.VectorStore = (*Store)(nil)

// SetVectors implements store.VectorStore in one transaction. The insert
// selects the memory by tenant, id and content, so a vector of content the
// memory no longer has is not stored.
func (s *Store) SetVectors(ctx context.Context, vs []store.MemoryVector) ([]bool, error) {
	blobs := make([][]byte, len(vs))
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
		blobs[i] = b
	}
	stored := make([]bool, len(vs))
	err := s.writeTx(ctx, "SetVectors", func(tx *sql.Tx) error {
		for i, v := range vs {
			res, err := tx.ExecContext(ctx, `INSERT INTO memory_vectors (memory_seq, model, vec)
				SELECT seq, ?, ? FROM memories WHERE tenant = ? AND id = ? AND content = ?
				ON CONFLICT (memory_seq) DO UPDATE SET model = excluded.model, vec = excluded.vec`,
				v.Model, blobs[i], v.Tenant, v.ID, v.Content)
			if err != nil {
				return s.fail(ctx, "SetVectors", err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return s.fail(ctx, "SetVectors", err)
			}
			stored[i] = n > 0
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// PendingVectors implements store.VectorStore, walking the (tenant, id)
// unique index.
func (s *Store) PendingVectors(ctx context.Context, model string, after store.VectorCursor, limit int) ([]store.Memory, error) {
	limit = min(max(limit, 1), 1000)
	leave, err := s.readTurn(ctx, "PendingVectors")
	if err != nil {
		return nil, err
	}
	defer leave()
	rows, err := s.reader.QueryContext(ctx, `SELECT `+memoryColumns+` FROM memories m
		LEFT JOIN memory_vectors v ON v.memory_seq = m.seq AND v.model = ?
		WHERE v.memory_seq IS NULL AND (m.tenant, m.id) > (?, ?)
		ORDER BY m.tenant, m.id LIMIT ?`, model, after.Tenant, after.ID, limit)
	if err != nil {
		return nil, s.fail(ctx, "PendingVectors", err)
	}
	defer rows.Close()
	var out []store.Memory
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, s.fail(ctx, "PendingVectors", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "PendingVectors", err)
	}
	return out, nil
}

// ScanVectors implements store.VectorStore.
func (s *Store) ScanVectors(ctx context.Context, model string, fn func(store.MemoryVector) error) error {
	leave, err := s.readTurn(ctx, "ScanVectors")
	if err != nil {
		return err
	}
	defer leave()
	rows, err := s.reader.QueryContext(ctx, `SELECT m.tenant, m.id, m.layer, m.scope_id, v.vec
		FROM memory_vectors v JOIN memories m ON m.seq = v.memory_seq WHERE v.model = ?`, model)
	if err != nil {
		return s.fail(ctx, "ScanVectors", err)
	}
	defer rows.Close()
	return backend.ScanVectorRows(rows, model, func(err error) error { return s.fail(ctx, "ScanVectors", err) }, fn)
}

// VectorProgress implements store.VectorStore.
func (s *Store) VectorProgress(ctx context.Context, model string) (done, total int, err error) {
	leave, err := s.readTurn(ctx, "VectorProgress")
	if err != nil {
		return 0, 0, err
	}
	defer leave()
	err = s.reader.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM memory_vectors WHERE model = ?),
		(SELECT count(*) FROM memories)`, model).Scan(&done, &total)
	if err != nil {
		return 0, 0, s.fail(ctx, "VectorProgress", err)
	}
	return done, total, nil
}

// getMemoriesSQL reads a tenant's memories by id from a JSON array, so
// that one prepared statement serves any number of them.
const getMemoriesSQL = `SELECT ` + memoryColumns + ` FROM memories m
	WHERE m.tenant = ? AND m.id IN (SELECT value FROM json_each(?))`

// GetMemories implements store.VectorStore. The ids travel as one JSON
// array parameter of a statement prepared once (hybrid search calls it on
// every search, and parsing it each time cost as much as reading the 50
// rows).
func (s *Store) GetMemories(ctx context.Context, tenant string, ids []string) ([]store.Memory, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	arr, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("store: GetMemories: %w", err)
	}
	// Prepared before the turn is taken: preparing needs a connection of
	// the pool (see searchText).
	q, err := s.readerStmts.stmt(ctx, getMemoriesSQL)
	if err != nil {
		return nil, s.fail(ctx, "GetMemories", err)
	}
	leave, err := s.readTurn(ctx, "GetMemories")
	if err != nil {
		return nil, err
	}
	defer leave()
	rows, err := q.QueryContext(ctx, tenant, string(arr))
	if err != nil {
		return nil, s.fail(ctx, "GetMemories", err)
	}
	defer rows.Close()
	var out []store.Memory
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, s.fail(ctx, "GetMemories", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "GetMemories", err)
	}
	return out, nil
}
