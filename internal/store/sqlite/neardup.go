package sqlite

import (
	"context"
	"strings"

	"github.com/toolsvc/toolsvc/internal/base/words"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

var _ store.NearDuplicateFinder = (*Store)(nil)

// nearDuplicateSQL walks the memories holding any of the keys of its
// MATCH, newest first, in the caller's scope, as the search window does
// (search.go). Its LIMIT is written in the text, as the window's
// (windowLimit).
var nearDuplicateSQL = `SELECT m.id, m.content, m.created_at
	FROM memories_fts CROSS JOIN memories m ON m.seq = memories_fts.rowid
	WHERE memories_fts MATCH ? AND m.tenant = ? AND m.layer = ? AND m.scope_id = ? AND m.orphaned = 0
	ORDER BY memories_fts.rowid ASC LIMIT ` + windowLimit

// NearDuplicateCandidates implements store.NearDuplicateFinder: the
// memories of sc holding one of content's near-duplicate keys
// (writeNearKey), found by one full-text lookup of those one or two
// tokens (a few more for long contents) in the caller's scope.
func (s *Store) NearDuplicateCandidates(ctx context.Context, tenant string, sc store.Scope, content string) ([]store.Memory, error) {
	if err := backend.RequireTenant(tenant); err != nil {
		return nil, err
	}
	if _, err := backend.PrepareSearch(store.SearchQuery{Tenant: tenant, Scopes: []store.Scope{sc}}); err != nil {
		return nil, err
	}
	keys := store.NearDuplicateKeys(words.Terms(content))
	if len(keys) == 0 {
		return nil, nil
	}
	sk := scopeKey(tenant, sc)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" OR ")
		}
		// Key tokens are ASCII letters and digits: quoting only keeps
		// FTS5 from reading one as a keyword.
		b.WriteByte('"')
		writeNearKey(&b, sk, k)
		b.WriteByte('"')
	}
	stmt, err := s.readerStmts.stmt(ctx, nearDuplicateSQL)
	if err != nil {
		return nil, s.fail(ctx, "NearDuplicateCandidates", err)
	}
	leave, err := s.readTurn(ctx, "NearDuplicateCandidates")
	if err != nil {
		return nil, err
	}
	defer leave()
	rows, err := stmt.QueryContext(ctx, b.String(), tenant, string(sc.Layer), sc.ScopeID)
	if err != nil {
		return nil, s.fail(ctx, "NearDuplicateCandidates", err)
	}
	defer rows.Close()
	var out []store.Memory
	for rows.Next() {
		m := store.Memory{Tenant: tenant, Layer: sc.Layer, ScopeID: sc.ScopeID}
		var created int64
		if err := rows.Scan(&m.ID, &m.Content, &created); err != nil {
			return nil, s.fail(ctx, "NearDuplicateCandidates", err)
		}
		m.CreatedAt = backend.FromMicros(created)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "NearDuplicateCandidates", err)
	}
	if len(out) > store.MatchedCap {
		out = out[:store.MatchedCap]
	}
	return out, nil
}
