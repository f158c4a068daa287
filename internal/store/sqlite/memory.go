package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// memoryColumns are read by scanMemory, in this order, from alias m.
const memoryColumns = `m.id, m.tenant, m.layer, m.scope_id, m.content, m.tags, m.metadata, m.source_type,
	m.knowledge_item_id, m.content_hash, m.orphaned, m.created_at, m.updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanMemory(row scanner, extra ...any) (store.Memory, error) {
	var (
		m                store.Memory
		layer            string
		tags, meta       []byte
		itemID           sql.NullString
		created, updated int64
	)
	dest := append([]any{&m.ID, &m.Tenant, &layer, &m.ScopeID, &m.Content, &tags, &meta, &m.SourceType,
		&itemID, &m.ContentHash, &m.Orphaned, &created, &updated}, extra...)
	if err := row.Scan(dest...); err != nil {
		return store.Memory{}, err
	}
	m.Layer = store.Layer(layer)
	m.KnowledgeItemID = itemID.String
	m.CreatedAt, m.UpdatedAt = backend.FromMicros(created), backend.FromMicros(updated)
	if err := backend.DecodeMemoryJSON(&m, tags, meta); err != nil {
		return store.Memory{}, fmt.Errorf("decode memory %s: %w", m.ID, err)
	}
	return m, nil
}

func nullable(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// AddMemory implements store.MemoryStore.
// Concurrent calls are committed together (addGroup).
func (s *Store) AddMemory(ctx context.Context, m *store.Memory) error {
	now := backend.Now()
	p, err := backend.PrepareMemory(m, now, false)
	if err != nil {
		return err
	}
	return s.addMemory(ctx, m, p, now.UnixMicro())
}

// AddMemories inserts several memories in one transaction, as AddMemory
// does for one: all or none are stored. It serves imports and benchmarks,
// where a commit (and fsync) per row would dominate.
func (s *Store) AddMemories(ctx context.Context, ms []*store.Memory) error {
	now := backend.Now()
	prepared := make([]backend.PreparedMemory, len(ms))
	for i, m := range ms {
		p, err := backend.PrepareMemory(m, now, false)
		if err != nil {
			return err
		}
		prepared[i] = p
	}
	// Prepared once on the writer's only connection, and before the
	// transaction takes it (preparing needs the connection too): the
	// transaction then reuses them instead of parsing SQL per add.
	insStmt, err := s.writerStmts.stmt(ctx, insertMemorySQL)
	if err != nil {
		return s.fail(ctx, "AddMemory", err)
	}
	tagStmt, err := s.writerStmts.stmt(ctx, insertTagSQL)
	if err != nil {
		return s.fail(ctx, "AddMemory", err)
	}
	return s.writeTx(ctx, "AddMemory", func(tx *sql.Tx) error {
		ins, tag := tx.StmtContext(ctx, insStmt), tx.StmtContext(ctx, tagStmt)
		for i, m := range ms {
			var seq int64
			err := ins.QueryRowContext(ctx, m.Tenant, m.ID, string(m.Layer), m.ScopeID, m.Content,
				prepared[i].TagsJSON, prepared[i].MetadataJSON, m.SourceType, nullable(m.KnowledgeItemID),
				m.ContentHash, m.Orphaned, now.UnixMicro(), now.UnixMicro()).Scan(&seq)
			if isUniqueViolation(err) {
				return fmt.Errorf("store: AddMemory %s: %w", m.ID, store.ErrConflict)
			}
			if err != nil {
				return s.fail(ctx, "AddMemory", err)
			}
			for _, t := range prepared[i].Tags {
				if _, err := tag.ExecContext(ctx, seq, m.Tenant, t); err != nil {
					return s.fail(ctx, "AddMemory", err)
				}
			}
		}
		return nil
	})
}

const (
	// newSeqSQL numbers a new memory below every other: seqs descend, so
	// that newest first is FTS5's ascending rowid order (migration 0003).
	// Writes are serialised (one writer connection, IMMEDIATE
	// transactions), so no other insert can take the same seq.
	newSeqSQL       = `(SELECT coalesce(min(seq), 0) - 1 FROM memories)`
	insertMemorySQL = `INSERT INTO memories (seq, tenant, id, layer, scope_id, content, tags, metadata,
		source_type, knowledge_item_id, content_hash, orphaned, created_at, updated_at)
		VALUES (` + newSeqSQL + `, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`
	insertTagSQL = `INSERT INTO memory_tags (memory_seq, tenant, tag) VALUES (?, ?, ?)`
)

// GetMemory implements store.MemoryStore.
func (s *Store) GetMemory(ctx context.Context, tenant, id string) (store.Memory, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return store.Memory{}, err
	}
	leave, err := s.readTurn(ctx, "GetMemory")
	if err != nil {
		return store.Memory{}, err
	}
	m, err := scanMemory(s.reader.QueryRowContext(ctx,
		`SELECT `+memoryColumns+` FROM memories m WHERE m.tenant = ? AND m.id = ?`, tenant, id))
	leave()
	if errors.Is(err, sql.ErrNoRows) {
		return store.Memory{}, fmt.Errorf("store: memory %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Memory{}, s.fail(ctx, "GetMemory", err)
	}
	return m, nil
}

// DeleteMemory implements store.MemoryStore. Tags and the full-text entry go
// with the row (foreign key cascade and trigger).
func (s *Store) DeleteMemory(ctx context.Context, tenant, id string) error {
	if err := backend.RequireTenant(tenant); err != nil {
		return err
	}
	leave, err := s.writeTurn(ctx, "DeleteMemory")
	if err != nil {
		return err
	}
	res, err := s.writer.ExecContext(ctx, `DELETE FROM memories WHERE tenant = ? AND id = ?`, tenant, id)
	leave()
	if err != nil {
		return s.fail(ctx, "DeleteMemory", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.fail(ctx, "DeleteMemory", err)
	} else if n == 0 {
		return fmt.Errorf("store: memory %q: %w", id, store.ErrNotFound)
	}
	return nil
}

// CountMemories implements store.MemoryStore.
func (s *Store) CountMemories(ctx context.Context, tenant string) (int, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return 0, err
	}
	leave, err := s.readTurn(ctx, "CountMemories")
	if err != nil {
		return 0, err
	}
	defer leave()
	var n int
	if err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM memories WHERE tenant = ?`, tenant).Scan(&n); err != nil {
		return 0, s.fail(ctx, "CountMemories", err)
	}
	return n, nil
}

// UpsertPointer implements store.MemoryStore.
func (s *Store) UpsertPointer(ctx context.Context, m *store.Memory) (created bool, err error) {
	now := backend.Now()
	p, err := backend.PrepareMemory(m, now, true)
	if err != nil {
		return false, err
	}
	err = s.writeTx(ctx, "UpsertPointer", func(tx *sql.Tx) error {
		var (
			seq       int64
			id        string
			createdAt int64
		)
		err := tx.QueryRowContext(ctx, `SELECT seq, id, created_at FROM memories WHERE tenant = ? AND knowledge_item_id = ?`,
			m.Tenant, m.KnowledgeItemID).Scan(&seq, &id, &createdAt)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			created = true
			err = tx.QueryRowContext(ctx, `INSERT INTO memories (seq, tenant, id, layer, scope_id, content, tags, metadata,
				source_type, knowledge_item_id, content_hash, orphaned, created_at, updated_at)
				VALUES (`+newSeqSQL+`, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?) RETURNING seq`,
				m.Tenant, m.ID, string(m.Layer), m.ScopeID, m.Content, p.TagsJSON, p.MetadataJSON, m.SourceType,
				m.KnowledgeItemID, m.ContentHash, now.UnixMicro(), now.UnixMicro()).Scan(&seq)
			if isUniqueViolation(err) {
				return fmt.Errorf("store: UpsertPointer %s: %w", m.ID, store.ErrConflict)
			}
		case err == nil:
			m.ID, m.CreatedAt = id, backend.FromMicros(createdAt)
			_, err = tx.ExecContext(ctx, `UPDATE memories SET layer = ?, scope_id = ?, content = ?, tags = ?, metadata = ?,
				source_type = ?, content_hash = ?, orphaned = 0, updated_at = ? WHERE seq = ?`,
				string(m.Layer), m.ScopeID, m.Content, p.TagsJSON, p.MetadataJSON, m.SourceType, m.ContentHash,
				now.UnixMicro(), seq)
			if err == nil {
				_, err = tx.ExecContext(ctx, `DELETE FROM memory_tags WHERE memory_seq = ?`, seq)
			}
		}
		if err != nil {
			return s.fail(ctx, "UpsertPointer", err)
		}
		for _, t := range p.Tags {
			if _, err := tx.ExecContext(ctx, `INSERT INTO memory_tags (memory_seq, tenant, tag) VALUES (?, ?, ?)`,
				seq, m.Tenant, t); err != nil {
				return s.fail(ctx, "UpsertPointer", err)
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	m.Orphaned = false
	return created, nil
}

// ListPointers implements store.MemoryStore.
func (s *Store) ListPointers(ctx context.Context, tenant string) ([]store.Memory, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return nil, err
	}
	leave, err := s.readTurn(ctx, "ListPointers")
	if err != nil {
		return nil, err
	}
	defer leave()
	rows, err := s.reader.QueryContext(ctx, `SELECT `+memoryColumns+` FROM memories m
		WHERE m.tenant = ? AND m.knowledge_item_id IS NOT NULL ORDER BY m.knowledge_item_id`, tenant)
	if err != nil {
		return nil, s.fail(ctx, "ListPointers", err)
	}
	defer rows.Close()
	out := []store.Memory{}
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, s.fail(ctx, "ListPointers", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "ListPointers", err)
	}
	return out, nil
}

// MarkOrphaned implements store.MemoryStore. The ids travel as one JSON
// array parameter, so any number fits in one statement.
func (s *Store) MarkOrphaned(ctx context.Context, tenant string, knowledgeItemIDs []string) (int, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return 0, err
	}
	if len(knowledgeItemIDs) == 0 {
		return 0, nil
	}
	ids, err := json.Marshal(knowledgeItemIDs)
	if err != nil {
		return 0, fmt.Errorf("store: MarkOrphaned: %w", err)
	}
	leave, err := s.writeTurn(ctx, "MarkOrphaned")
	if err != nil {
		return 0, err
	}
	defer leave()
	res, err := s.writer.ExecContext(ctx, `UPDATE memories SET orphaned = 1, updated_at = ?
		WHERE tenant = ? AND orphaned = 0 AND knowledge_item_id IN (SELECT value FROM json_each(?))`,
		backend.Now().UnixMicro(), tenant, ids)
	if err != nil {
		return 0, s.fail(ctx, "MarkOrphaned", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, s.fail(ctx, "MarkOrphaned", err)
	}
	return int(n), nil
}
