package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// memoryColumns are read by scanMemory, in this order, from alias m.
const memoryColumns = `m.id, m.tenant, m.layer, m.scope_id, m.content, m.tags, m.metadata, m.source_type,
	m.knowledge_item_id, m.content_hash, m.orphaned, m.created_at, m.updated_at`

const insertMemory = `INSERT INTO memories (tenant, id, layer, scope_id, content, tags, metadata, source_type,
	knowledge_item_id, content_hash, orphaned, created_at, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)`

func scanMemory(row pgx.Row, extra ...any) (store.Memory, error) {
	var (
		m                store.Memory
		layer            string
		meta             []byte
		itemID           *string
		created, updated time.Time
	)
	dest := append([]any{&m.ID, &m.Tenant, &layer, &m.ScopeID, &m.Content, &m.Tags, &meta, &m.SourceType,
		&itemID, &m.ContentHash, &m.Orphaned, &created, &updated}, extra...)
	if err := row.Scan(dest...); err != nil {
		return store.Memory{}, err
	}
	m.Layer = store.Layer(layer)
	if itemID != nil {
		m.KnowledgeItemID = *itemID
	}
	m.CreatedAt, m.UpdatedAt = backend.Normalize(created), backend.Normalize(updated)
	tags := m.Tags
	if err := backend.DecodeMemoryJSON(&m, nil, meta); err != nil {
		return store.Memory{}, fmt.Errorf("decode memory %s: %w", m.ID, err)
	}
	if tags != nil {
		m.Tags = tags
	}
	return m, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// AddMemory implements store.MemoryStore.
func (s *Store) AddMemory(ctx context.Context, m *store.Memory) error {
	p, err := backend.PrepareMemory(m, backend.Now(), false)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, insertMemory, m.Tenant, m.ID, string(m.Layer), m.ScopeID, m.Content, p.Tags,
		p.MetadataJSON, m.SourceType, nullable(m.KnowledgeItemID), m.ContentHash, m.Orphaned, m.CreatedAt)
	if isUniqueViolation(err) {
		return fmt.Errorf("store: AddMemory %s: %w", m.ID, store.ErrConflict)
	}
	return s.fail(ctx, "AddMemory", err)
}

// AddMemories inserts several memories in one transaction, as AddMemory
// does for one: all or none are stored. It serves imports and benchmarks.
func (s *Store) AddMemories(ctx context.Context, ms []*store.Memory) error {
	now := backend.Now()
	batch := &pgx.Batch{}
	for _, m := range ms {
		p, err := backend.PrepareMemory(m, now, false)
		if err != nil {
			return err
		}
		batch.Queue(insertMemory, m.Tenant, m.ID, string(m.Layer), m.ScopeID, m.Content, p.Tags,
			p.MetadataJSON, m.SourceType, nullable(m.KnowledgeItemID), m.ContentHash, m.Orphaned, now)
	}
	err := s.inTx(ctx, "AddMemory", func(tx pgx.Tx) error {
		err := tx.SendBatch(ctx, batch).Close()
		if isUniqueViolation(err) {
			return fmt.Errorf("store: AddMemory: %w", store.ErrConflict)
		}
		return s.fail(ctx, "AddMemory", err)
	})
	if err != nil || len(ms) < analyzeAfter {
		return err
	}
	// A bulk load changes the statistics faster than autovacuum notices;
	// stale ones make the planner pick a scope scan over the GIN index.
	// Vacuuming the term lists marks their new pages all-visible, which
	// lets a search read a list from its index alone; until then every
	// entry costs a visit to the table (measured at a million memories:
	// docs/BENCHMARKS.md, "Design measurements"). It visits only the pages not yet
	// marked, so it costs little more than the rows just written.
	if _, err := s.pool.Exec(ctx, `ANALYZE memories`); err != nil {
		return s.fail(ctx, "AddMemory", err)
	}
	_, err = s.pool.Exec(ctx, `VACUUM (ANALYZE) memory_terms`)
	return s.fail(ctx, "AddMemory", err)
}

// analyzeAfter is the batch size from which AddMemories refreshes the
// planner statistics.
const analyzeAfter = 1000

// GetMemory implements store.MemoryStore.
func (s *Store) GetMemory(ctx context.Context, tenant, id string) (store.Memory, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return store.Memory{}, err
	}
	m, err := scanMemory(s.pool.QueryRow(ctx, `SELECT `+memoryColumns+` FROM memories m WHERE m.tenant = $1 AND m.id = $2`, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Memory{}, fmt.Errorf("store: memory %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Memory{}, s.fail(ctx, "GetMemory", err)
	}
	return m, nil
}

// DeleteMemory implements store.MemoryStore.
func (s *Store) DeleteMemory(ctx context.Context, tenant, id string) error {
	if err := backend.RequireTenant(tenant); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM memories WHERE tenant = $1 AND id = $2`, tenant, id)
	if err != nil {
		return s.fail(ctx, "DeleteMemory", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("store: memory %q: %w", id, store.ErrNotFound)
	}
	return nil
}

// CountMemories implements store.MemoryStore.
func (s *Store) CountMemories(ctx context.Context, tenant string) (int, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return 0, err
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM memories WHERE tenant = $1`, tenant).Scan(&n); err != nil {
		return 0, s.fail(ctx, "CountMemories", err)
	}
	return n, nil
}

// UpsertPointer implements store.MemoryStore in one statement; xmax = 0
// tells a fresh row from an updated one.
func (s *Store) UpsertPointer(ctx context.Context, m *store.Memory) (bool, error) {
	now := backend.Now()
	p, err := backend.PrepareMemory(m, now, true)
	if err != nil {
		return false, err
	}
	var (
		created   bool
		createdAt time.Time
	)
	err = s.pool.QueryRow(ctx, `INSERT INTO memories (tenant, id, layer, scope_id, content, tags, metadata,
			source_type, knowledge_item_id, content_hash, orphaned, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, false, $11, $11)
		ON CONFLICT (tenant, knowledge_item_id) WHERE knowledge_item_id IS NOT NULL DO UPDATE SET
			layer = EXCLUDED.layer, scope_id = EXCLUDED.scope_id, content = EXCLUDED.content, tags = EXCLUDED.tags,
			metadata = EXCLUDED.metadata, source_type = EXCLUDED.source_type, content_hash = EXCLUDED.content_hash,
			orphaned = false, updated_at = EXCLUDED.updated_at
		RETURNING id, created_at, xmax = 0`,
		m.Tenant, m.ID, string(m.Layer), m.ScopeID, m.Content, p.Tags, p.MetadataJSON, m.SourceType,
		m.KnowledgeItemID, m.ContentHash, now).Scan(&m.ID, &createdAt, &created)
	if isUniqueViolation(err) {
		return false, fmt.Errorf("store: UpsertPointer %s: %w", m.ID, store.ErrConflict)
	}
	if err != nil {
		return false, s.fail(ctx, "UpsertPointer", err)
	}
	m.CreatedAt, m.Orphaned = backend.Normalize(createdAt), false
	return created, nil
}

// ListPointers implements store.MemoryStore.
func (s *Store) ListPointers(ctx context.Context, tenant string) ([]store.Memory, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+memoryColumns+` FROM memories m
		WHERE m.tenant = $1 AND m.knowledge_item_id IS NOT NULL ORDER BY m.knowledge_item_id`, tenant)
	if err != nil {
		return nil, s.fail(ctx, "ListPointers", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Memory, error) { return scanMemory(r) })
	if err != nil {
		return nil, s.fail(ctx, "ListPointers", err)
	}
	if out == nil {
		out = []store.Memory{}
	}
	return out, nil
}

// MarkOrphaned implements store.MemoryStore.
func (s *Store) MarkOrphaned(ctx context.Context, tenant string, knowledgeItemIDs []string) (int, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return 0, err
	}
	if len(knowledgeItemIDs) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `UPDATE memories SET orphaned = true, updated_at = $1
		WHERE tenant = $2 AND NOT orphaned AND knowledge_item_id = ANY($3::text[])`,
		backend.Now(), tenant, knowledgeItemIDs)
	if err != nil {
		return 0, s.fail(ctx, "MarkOrphaned", err)
	}
	return int(tag.RowsAffected()), nil
}
