package sqlite

import (
	"context"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

var _ store.DefinitionStore = (*Store)(nil)

// PinDefinition implements store.DefinitionStore: on the one writer
// connection, the first definition of a tool stays.
func (s *Store) PinDefinition(ctx context.Context, d *store.ToolDefinition) (*store.ToolDefinition, error) {
	const op = "PinDefinition"
	if d.At.IsZero() {
		d.At = backend.Now()
	}
	leave, err := s.writeTurn(ctx, op)
	if err != nil {
		return nil, err
	}
	defer leave()
	if _, err := s.writer.ExecContext(ctx, `INSERT INTO upstream_definitions (upstream, tool, fingerprint, definition, approved_by, at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (upstream, tool) DO NOTHING`,
		d.Upstream, d.Tool, d.Fingerprint, d.Definition, d.ApprovedBy, d.At.UnixMicro()); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	out := &store.ToolDefinition{Upstream: d.Upstream, Tool: d.Tool}
	var at int64
	if err := s.writer.QueryRowContext(ctx, `SELECT fingerprint, definition, approved_by, at FROM upstream_definitions WHERE upstream = ? AND tool = ?`,
		d.Upstream, d.Tool).Scan(&out.Fingerprint, &out.Definition, &out.ApprovedBy, &at); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	out.At = time.UnixMicro(at).UTC()
	return out, nil
}

// ApproveDefinition implements store.DefinitionStore.
func (s *Store) ApproveDefinition(ctx context.Context, d *store.ToolDefinition) error {
	const op = "ApproveDefinition"
	if d.At.IsZero() {
		d.At = backend.Now()
	}
	leave, err := s.writeTurn(ctx, op)
	if err != nil {
		return err
	}
	defer leave()
	if _, err := s.writer.ExecContext(ctx, `INSERT INTO upstream_definitions (upstream, tool, fingerprint, definition, approved_by, at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (upstream, tool) DO UPDATE SET fingerprint = excluded.fingerprint,
			definition = excluded.definition, approved_by = excluded.approved_by, at = excluded.at`,
		d.Upstream, d.Tool, d.Fingerprint, d.Definition, d.ApprovedBy, d.At.UnixMicro()); err != nil {
		return s.fail(ctx, op, err)
	}
	return nil
}

// ApprovedDefinitions implements store.DefinitionStore.
func (s *Store) ApprovedDefinitions(ctx context.Context, upstream string) (map[string]*store.ToolDefinition, error) {
	const op = "ApprovedDefinitions"
	leave, err := s.readTurn(ctx, op)
	if err != nil {
		return nil, err
	}
	defer leave()
	rows, err := s.reader.QueryContext(ctx, `SELECT tool, fingerprint, definition, approved_by, at FROM upstream_definitions WHERE upstream = ?`, upstream)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	defer rows.Close()
	out := map[string]*store.ToolDefinition{}
	for rows.Next() {
		d := &store.ToolDefinition{Upstream: upstream}
		var at int64
		if err := rows.Scan(&d.Tool, &d.Fingerprint, &d.Definition, &d.ApprovedBy, &at); err != nil {
			return nil, s.fail(ctx, op, err)
		}
		d.At = time.UnixMicro(at).UTC()
		out[d.Tool] = d
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return out, nil
}
