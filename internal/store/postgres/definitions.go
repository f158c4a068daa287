package postgres

import (
	"context"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

var _ store.DefinitionStore = (*Store)(nil)

// PinDefinition implements store.DefinitionStore: the first replica's
// definition of a tool stays; every replica reads the one recorded.
func (s *Store) PinDefinition(ctx context.Context, d *store.ToolDefinition) (*store.ToolDefinition, error) {
	const op = "PinDefinition"
	if d.At.IsZero() {
		d.At = backend.Now()
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO upstream_definitions (upstream, tool, fingerprint, definition, approved_by, at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (upstream, tool) DO NOTHING`,
		d.Upstream, d.Tool, d.Fingerprint, d.Definition, d.ApprovedBy, d.At); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	out := &store.ToolDefinition{Upstream: d.Upstream, Tool: d.Tool}
	if err := s.pool.QueryRow(ctx, `SELECT fingerprint, definition, approved_by, at FROM upstream_definitions WHERE upstream = $1 AND tool = $2`,
		d.Upstream, d.Tool).Scan(&out.Fingerprint, &out.Definition, &out.ApprovedBy, &out.At); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	out.At = backend.Normalize(out.At)
	return out, nil
}

// ApproveDefinition implements store.DefinitionStore.
func (s *Store) ApproveDefinition(ctx context.Context, d *store.ToolDefinition) error {
	if d.At.IsZero() {
		d.At = backend.Now()
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO upstream_definitions (upstream, tool, fingerprint, definition, approved_by, at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (upstream, tool) DO UPDATE SET fingerprint = excluded.fingerprint,
			definition = excluded.definition, approved_by = excluded.approved_by, at = excluded.at`,
		d.Upstream, d.Tool, d.Fingerprint, d.Definition, d.ApprovedBy, d.At); err != nil {
		return s.fail(ctx, "ApproveDefinition", err)
	}
	return nil
}

// ApprovedDefinitions implements store.DefinitionStore.
func (s *Store) ApprovedDefinitions(ctx context.Context, upstream string) (map[string]*store.ToolDefinition, error) {
	const op = "ApprovedDefinitions"
	rows, err := s.pool.Query(ctx, `SELECT tool, fingerprint, definition, approved_by, at FROM upstream_definitions WHERE upstream = $1`, upstream)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	defer rows.Close()
	out := map[string]*store.ToolDefinition{}
	for rows.Next() {
		d := &store.ToolDefinition{Upstream: upstream}
		if err := rows.Scan(&d.Tool, &d.Fingerprint, &d.Definition, &d.ApprovedBy, &d.At); err != nil {
			return nil, s.fail(ctx, op, err)
		}
		d.At = backend.Normalize(d.At)
		out[d.Tool] = d
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return out, nil
}
