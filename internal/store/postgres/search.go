package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// SearchMemories implements store.MemoryStore.
//
// Each token becomes plainto_tsquery('english', $n): bound as a parameter
// and parsed as plain text, so no tsquery operator in a term is ever
// interpreted. The tsqueries are OR-ed (or AND-ed in groups, see
// store.SearchQuery.MinMatch) and matched through the GIN index; the newest
// store.MatchedCap+1 matches in scope form the window that is ranked by
// ts_rank_cd and counted by a window function in the same pass.
// Without terms, rows come newest first and a separate count stops at
// store.MatchedCap+1 rows.
func (s *Store) SearchMemories(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	sq, err := backend.PrepareSearch(q)
	if err != nil {
		return store.SearchResult{}, err
	}
	res := store.SearchResult{Candidates: []store.Candidate{}}
	if sq.MatchesNothing() {
		return res, nil
	}
	filter, args := searchFilter(sq)

	var query string
	if sq.Text {
		// Each token used is bound once; a token the groups leave out
		// is not bound at all (PostgreSQL cannot type an unused $n).
		refs := make(map[string]string, len(sq.Tokens))
		ref := func(tok string) string {
			if r, ok := refs[tok]; ok {
				return r
			}
			args = append(args, tok)
			refs[tok] = "plainto_tsquery('english', $" + strconv.Itoa(len(args)) + ")"
			return refs[tok]
		}
		tsq := sq.Render(ref, " && ", " || ")
		args = append(args, store.MatchedCap+1, sq.Limit)
		query = `SELECT ` + windowColumns + `, ts_rank_cd(w.tsv, w.query)::float8 AS score, count(*) OVER ()
			FROM (SELECT m.*, q.query FROM memories m, (SELECT ` + tsq + `) AS q(query)
				WHERE m.tsv @@ q.query AND ` + filter + `
				ORDER BY m.created_at DESC, m.id DESC LIMIT $` + strconv.Itoa(len(args)-1) + `) AS w
			ORDER BY score DESC, w.created_at DESC, w.id DESC LIMIT $` + strconv.Itoa(len(args))
	} else {
		args = append(args, sq.Limit)
		query = `SELECT ` + memoryColumns + `, 0::float8, 0::bigint FROM memories m WHERE ` + filter + `
			ORDER BY m.created_at DESC, m.id DESC LIMIT $` + strconv.Itoa(len(args))
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	var matched int64
	res.Candidates, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Candidate, error) {
		var score float64
		m, err := scanMemory(r, &score, &matched)
		return store.Candidate{Memory: m, Relevance: max(0, score)}, err
	})
	if err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	if res.Candidates == nil {
		res.Candidates = []store.Candidate{}
	}

	if !sq.Text {
		filter, args := searchFilter(sq)
		args = append(args, store.MatchedCap+1)
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM memories m WHERE `+filter+`
			LIMIT $`+strconv.Itoa(len(args))+`) AS capped`, args...).Scan(&matched)
		if err != nil {
			return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
		}
	}
	res.Matched = int(matched)
	if res.Matched > store.MatchedCap {
		res.Matched, res.Capped = store.MatchedCap, true
	}
	return res, nil
}

// windowColumns are memoryColumns on the window subquery's alias w.
var windowColumns = strings.ReplaceAll(memoryColumns, "m.", "w.")

// searchFilter renders the tenant, scope, orphan and tag conditions on alias
// m, numbering placeholders from $1. Scope pairs travel as two parallel
// arrays so the statement text does not depend on their number.
func searchFilter(sq backend.Search) (string, []any) {
	layers := make([]string, len(sq.Scopes))
	scopeIDs := make([]string, len(sq.Scopes))
	for i, sc := range sq.Scopes {
		layers[i], scopeIDs[i] = string(sc.Layer), sc.ScopeID
	}
	args := []any{sq.Tenant, layers, scopeIDs}
	filter := `m.tenant = $1 AND (m.layer, m.scope_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))`
	if !sq.IncludeOrphaned {
		filter += ` AND NOT m.orphaned`
	}
	if len(sq.Tags) > 0 {
		args = append(args, sq.Tags)
		filter += ` AND m.tags @> $4::text[]`
	}
	return filter, args
}
