package postgres

import (
	"context"
	"errors"
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
// store.SearchQuery.MinMatch); the newest store.MatchedCap+1 matches in
// scope form the window that is ranked by ts_rank_cd and counted by a
// window function in the same pass (textWindow says how the matches are
// found). Without terms, rows come newest first and a separate count stops
// at store.MatchedCap+1 rows.
func (s *Store) SearchMemories(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	return s.search(ctx, q, termLists)
}

// search is SearchMemories, reading the scoped term lists when lists says
// so of the search (see textWindow).
func (s *Store) search(ctx context.Context, q store.SearchQuery, lists func(backend.Search) bool) (store.SearchResult, error) {
	sq, err := backend.PrepareSearch(q)
	if err != nil {
		return store.SearchResult{}, err
	}
	res := store.SearchResult{Candidates: []store.Candidate{}}
	if sq.MatchesNothing() {
		return res, nil
	}
	filter, args := searchFilter(sq)

	var (
		query  string
		pinned bool
	)
	if sq.Text {
		pinned = lists(sq)
		query, args = textWindow(sq, filter, args, pinned)
	} else {
		args = append(args, sq.Limit)
		query = `SELECT ` + memoryColumns + `, 0::float8, 0::bigint FROM memories m WHERE ` + filter + `
			ORDER BY m.created_at DESC, m.id DESC LIMIT $` + strconv.Itoa(len(args))
	}
	var matched int64
	collect := func(rows pgx.Rows) (err error) {
		res.Candidates, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Candidate, error) {
			var score float64
			m, err := scanMemory(r, &score, &matched)
			return store.Candidate{Memory: m, Relevance: max(0, score)}, err
		})
		return err
	}
	if pinned {
		err = s.pinnedQuery(ctx, query, args, collect)
	} else {
		err = s.query(ctx, query, args, collect)
	}
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

// query runs a statement and hands its rows to collect.
func (s *Store) query(ctx context.Context, query string, args []any, collect func(pgx.Rows) error) error {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	return collect(rows)
}

// pinnedQuery runs a term-list window under pinTermListPlan, both in one
// round trip and one transaction (a batch is one implicit transaction), so
// the planner settings last for the statement alone.
func (s *Store) pinnedQuery(ctx context.Context, query string, args []any, collect func(pgx.Rows) error) error {
	b := &pgx.Batch{}
	b.Queue(pinTermListPlan)
	b.Queue(query, args...)
	br := s.pool.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return err
	}
	rows, err := br.Query()
	if err == nil {
		err = collect(rows)
	}
	return errors.Join(err, br.Close())
}

// pinTermListPlan leaves the planner one plan for a term-list window: the
// lists read newest first from the B-tree (no bitmap scan, no sort), merged
// and de-duplicated in order (Merge Append, Unique: no hash aggregate),
// each memory joined by its key (nested loop), stopping when the window is
// full. The planner knows a list's length only on average (a generic
// plan's parameters, and the lexemes and scope numbers are subqueries), so
// left alone it fetches and sorts whole lists whenever it expects them
// short, or hashes all matches when it expects them long: 10 to 100 times
// the work for a common word (docs/BENCHMARKS.md). The settings are local
// to the transaction (set_config's third argument); the window's final
// sort by score is the one sort left, and it is small. A disabled plan
// type only costs more to the planner, so the estimate is far above
// jit_above_cost: JIT is turned off too (it compiled for 0.4 s).
const pinTermListPlan = `SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true),
	set_config('enable_hashagg', 'off', true), set_config('enable_hashjoin', 'off', true),
	set_config('enable_mergejoin', 'off', true), set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true)`

// textWindow renders the statement of a text search with searchFilter's
// filter, appending its parameters to args (the filter's); lists chooses
// the scoped term lists over the GIN index.
//
// OR-ed tokens without tags (a search's usual form) read the scoped terms
// of migration 0008: for each token and each of the caller's scopes, the
// B-tree lists the memories holding the token's lexeme newest first; the
// lists are merged (Merge Append), and each memory, joined by its key, is
// checked against the filter and the exact text query until the window
// is full. The work is the window's size, whatever the number of matches
// in the tenant. A token's list is that of the first lexeme PostgreSQL
// makes of it; a token of several lexemes needs them all, so the list
// holds every match of the token, and the text query drops the others.
//
// Token groups (MinMatch), a tag filter or more than maxTermLists lists go
// through the GIN index instead, which can intersect the groups' words and
// the tags' index: it fetches every match of the tenant, keeps those of
// the caller's scopes and sorts them by age.
func textWindow(sq backend.Search, filter string, args []any, lists bool) (string, []any) {
	// Each token used is bound once; a token the groups leave out is not
	// bound at all (PostgreSQL cannot type an unused $n).
	params := make(map[string]string, len(sq.Tokens))
	tsq := sq.Render(func(tok string) string {
		p, ok := params[tok]
		if !ok {
			args = append(args, tok)
			p = "$" + strconv.Itoa(len(args))
			params[tok] = p
		}
		return "plainto_tsquery('english', " + p + "::text)"
	}, " && ", " || ")
	from, order := `memories m`, `m.created_at DESC, m.id DESC`
	if lists {
		var b strings.Builder
		for _, tok := range sq.Tokens {
			lexeme := `(SELECT (tsvector_to_array(to_tsvector('english', ` + params[tok] + `::text)))[1])`
			for i := range sq.Scopes {
				if b.Len() > 0 {
					b.WriteString(" UNION ALL ")
				}
				n := strconv.Itoa(i + 1)
				b.WriteString(`(SELECT t.created_at, t.id FROM memory_terms t
					WHERE t.scope = (SELECT s.key FROM memory_scopes s
						WHERE s.tenant = $1 AND s.layer = ($2::text[])[` + n + `] AND s.scope_id = ($3::text[])[` + n + `])
					AND t.lexeme = ` + lexeme + `
					ORDER BY t.created_at DESC, t.id DESC)`)
			}
		}
		// Each memory is read by its key in the order of the merge: a
		// lateral subquery behind OFFSET 0 is not flattened into a join
		// the planner could turn round.
		from = `(SELECT DISTINCT l.created_at, l.id FROM (` + b.String() + `) AS l
				ORDER BY l.created_at DESC, l.id DESC) AS c
			CROSS JOIN LATERAL (SELECT * FROM memories m
				WHERE m.tenant = $1 AND m.id = c.id AND m.created_at = c.created_at OFFSET 0) AS m`
		order = `c.created_at DESC, c.id DESC`
	}
	args = append(args, store.MatchedCap+1, sq.Limit)
	return `SELECT ` + windowColumns + `, ts_rank_cd(w.tsv, w.query)::float8 AS score, count(*) OVER ()
		FROM (SELECT m.*, q.query FROM ` + from + `, (SELECT ` + tsq + `) AS q(query)
			WHERE m.tsv @@ q.query AND ` + filter + `
			ORDER BY ` + order + ` LIMIT $` + strconv.Itoa(len(args)-1) + `) AS w
		ORDER BY score DESC, w.created_at DESC, w.id DESC LIMIT $` + strconv.Itoa(len(args)), args
}

// maxTermLists bounds the scoped term lists (tokens × scopes) one search
// merges; beyond it the statement and its plan grow more than the GIN
// index costs.
const maxTermLists = 64

// termLists reports whether textWindow reads the scoped term lists.
func termLists(sq backend.Search) bool {
	return sq.Groups == nil && len(sq.Tags) == 0 && len(sq.Tokens)*len(sq.Scopes) <= maxTermLists
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
