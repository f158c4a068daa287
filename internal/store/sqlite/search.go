package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// SearchMemories implements store.MemoryStore. Both statements run in one
// read transaction, so Matched and Candidates come from one snapshot.
//
// With terms, the FTS5 MATCH drives the query (CROSS JOIN pins it as the
// outer loop): it yields only rows containing a token, each is joined to
// its memory by rowid and filtered by tenant, scope, tags and orphan state,
// and bm25() is computed only for the survivors (it costs far more per row
// than the join). Without terms, each scope's index range is read newest
// first and stops after the limit; the k-way merge of those short lists is
// cheap. Matched comes from a count that stops at store.MatchedCap+1.
func (s *Store) SearchMemories(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	sq, err := backend.PrepareSearch(q)
	if err != nil {
		return store.SearchResult{}, err
	}
	res := store.SearchResult{Candidates: []store.Candidate{}}
	if sq.MatchesNothing() {
		return res, nil
	}
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	defer func() { _ = tx.Rollback() }()

	filter, filterArgs := searchFilter(sq, sq.Scopes)
	var listQuery, countQuery string
	var listArgs, countArgs []any
	if sq.Text {
		const from = `FROM memories_fts CROSS JOIN memories m ON m.seq = memories_fts.rowid WHERE memories_fts MATCH ? AND `
		match := matchExpr(sq.Tokens)
		listQuery = `SELECT ` + memoryColumns + `, bm25(memories_fts) AS score ` + from + filter + `
			ORDER BY score, m.created_at DESC, m.id DESC LIMIT ?`
		listArgs = append(append([]any{match}, filterArgs...), sq.Limit)
		countQuery = `SELECT count(*) FROM (SELECT 1 ` + from + filter + ` LIMIT ?)`
		countArgs = append(append([]any{match}, filterArgs...), store.MatchedCap+1)
	} else {
		parts := make([]string, len(sq.Scopes))
		for i, sc := range sq.Scopes {
			f, args := searchFilter(sq, []store.Scope{sc})
			parts[i] = `SELECT * FROM (SELECT ` + memoryColumns + `, 0.0 AS score FROM memories m WHERE ` + f + `
				ORDER BY m.created_at DESC, m.id DESC LIMIT ?)`
			listArgs = append(append(listArgs, args...), sq.Limit)
		}
		listQuery = `SELECT * FROM (` + strings.Join(parts, ` UNION ALL `) + `) ORDER BY created_at DESC, id DESC LIMIT ?`
		listArgs = append(listArgs, sq.Limit)
		countQuery = `SELECT count(*) FROM (SELECT 1 FROM memories m WHERE ` + filter + ` LIMIT ?)`
		countArgs = append(slices.Clone(filterArgs), store.MatchedCap+1)
	}

	rows, err := tx.QueryContext(ctx, listQuery, listArgs...)
	if err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	defer rows.Close()
	for rows.Next() {
		var score float64
		m, err := scanMemory(rows, &score)
		if err != nil {
			return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
		}
		// bm25 is negative, more negative is better; FTS5 keeps it away
		// from zero, the clamp only guards the documented >= 0.
		res.Candidates = append(res.Candidates, store.Candidate{Memory: m, Relevance: max(0, -score)})
	}
	if err := rows.Err(); err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	if err := tx.QueryRowContext(ctx, countQuery, countArgs...).Scan(&res.Matched); err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	if res.Matched > store.MatchedCap {
		res.Matched, res.Capped = store.MatchedCap, true
	}
	return res, nil
}

// searchFilter renders the tenant, scope, orphan and tag conditions of sq on
// alias m, for the given scopes. Only placeholders carry values.
func searchFilter(sq backend.Search, scopes []store.Scope) (string, []any) {
	var b strings.Builder
	args := []any{sq.Tenant}
	b.WriteString(`m.tenant = ? AND (`)
	for i, sc := range scopes {
		if i > 0 {
			b.WriteString(` OR `)
		}
		b.WriteString(`(m.layer = ? AND m.scope_id = ?)`)
		args = append(args, string(sc.Layer), sc.ScopeID)
	}
	b.WriteString(`)`)
	if !sq.IncludeOrphaned {
		b.WriteString(` AND m.orphaned = 0`)
	}
	for _, t := range sq.Tags {
		b.WriteString(` AND EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_seq = m.seq AND t.tag = ?)`)
		args = append(args, t)
	}
	return b.String(), args
}

// matchExpr renders tokens as an FTS5 query: each token a quoted string
// (embedded quotes doubled, although backend.Tokens never leaves any), all
// OR-ed. Quoted, words like OR or NEAR are plain text.
func matchExpr(tokens []string) string {
	parts := make([]string, len(tokens))
	for i, t := range tokens {
		parts[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(parts, " OR ")
}
