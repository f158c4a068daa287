package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

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
// scope form the window, ranked by BM25 and counted in the same statement
// (textWindow says how the matches are found). Without terms, rows come
// newest first and a separate count stops at store.MatchedCap+1 rows.
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
	scan := func(r pgx.CollectableRow) (store.Candidate, error) {
		var score float64
		m, err := scanMemory(r, &score, &matched)
		return store.Candidate{Memory: m, Relevance: max(0, score)}, err
	}
	if sq.Text && sq.Light {
		res.Light = true
		scan = func(r pgx.CollectableRow) (store.Candidate, error) {
			var (
				c       store.Candidate
				layer   string
				created time.Time
			)
			m := &c.Memory
			err := r.Scan(&m.ID, &m.Tenant, &layer, &m.ScopeID, &m.Content, &created, &c.Relevance, &matched)
			m.Layer, m.CreatedAt, c.Relevance = store.Layer(layer), backend.Normalize(created), max(0, c.Relevance)
			return c, err
		}
	}
	collect := func(rows pgx.Rows) (err error) {
		res.Candidates, err = pgx.CollectRows(rows, scan)
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
// lists read newest first from the B-tree (no bitmap scan, no sequential
// scan, no sort), merged in order (Merge Append) and numbered until the
// window is full. The planner knows a list's length only on average (a
// generic plan's parameters, and the lexemes and scope numbers are
// subqueries), so left alone it fetches and sorts whole lists whenever it
// expects them short: 10 to 100 times the work for a common word
// (docs/BENCHMARKS.md). The settings are local to the transaction
// (set_config's third argument). A disabled plan type only costs more to
// the planner, so the estimate of the few small sorts left (the window's
// ranking) is far above jit_above_cost: JIT is turned off too (it compiled
// for 0.4 s).
const pinTermListPlan = `SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true),
	set_config('enable_sort', 'off', true), set_config('jit', 'off', true)`

// textWindow renders the statement of a text search with searchFilter's
// filter, appending its parameters to args (the filter's); lists chooses
// the scoped term lists over the GIN index. The statement answers the
// window's best sq.Limit memories, in full or light (sq.Light), each with
// its score and the window's size.
//
// The window is the newest store.MatchedCap+1 matches in scope, ranked by
// Okapi BM25 on the window's own statistics, as SQLite ranks it
// (backend.Ranking): each word of the search counts as its lexeme, a
// memory's frequency of it is the lexeme's positions in tsv, a memory's
// length all its positions. Both ways below make the same rows (w: one per
// memory and lexeme of the search it holds) and rank them the same way.
//
// OR-ed tokens without tags (a search's usual form) read the scoped term
// lists of migration 0008: for each token and each of the caller's scopes
// the B-tree lists the memories holding the token's lexeme newest first,
// each with its frequency and length. The lists are merged (Merge Append)
// and numbered by memory (dense_rank), and the merge stops at the window's
// size (the window function's run condition): the window and its ranking
// come from the index alone, and only the memories shown are read. A
// token's lexeme is the one PostgreSQL's english configuration makes of it
// (a token is a run of letters and digits: one lexeme, or none for a stop
// word, TestTokensMakeOneLexeme).
//
// Token groups (MinMatch), a tag filter or more than maxTermLists lists go
// through the GIN index instead, which can intersect the groups' words and
// the tags' index: it fetches every match of the tenant, keeps those of
// the caller's scopes and sorts them by age; the window's memories are
// then read for their lexemes (memory_term_rows, as the lists are kept).
func textWindow(sq backend.Search, filter string, args []any, lists bool) (string, []any) {
	// Each token is bound once: the groups use some, the ranking all.
	params := make(map[string]string, len(sq.Tokens))
	bind := func(tok string) string {
		p, ok := params[tok]
		if !ok {
			args = append(args, tok)
			p = "$" + strconv.Itoa(len(args))
			params[tok] = p
		}
		return p
	}
	lexemes := make([]string, len(sq.Tokens))
	for j, tok := range sq.Tokens {
		lexemes[j] = `(tsvector_to_array(to_tsvector('english', ` + bind(tok) + `::text)))[1]`
	}
	args = append(args, store.MatchedCap+1)
	capRef := "$" + strconv.Itoa(len(args))
	args = append(args, sq.Limit)
	limitRef := "$" + strconv.Itoa(len(args))

	columns := memoryColumns
	if sq.Light {
		columns = lightColumns
	}
	var w string
	if lists {
		keys := make([]string, len(sq.Scopes))
		for i := range sq.Scopes {
			n := strconv.Itoa(i + 1)
			keys[i] = `(SELECT s.key FROM memory_scopes s
				WHERE s.tenant = $1 AND s.layer = ($2::text[])[` + n + `] AND s.scope_id = ($3::text[])[` + n + `])`
		}
		orphans := ""
		if !sq.IncludeOrphaned {
			orphans = " AND NOT t.orphaned"
		}
		var b strings.Builder
		for j := range sq.Tokens {
			lx := `lx[` + strconv.Itoa(j+1) + `]`
			for i := range sq.Scopes {
				if b.Len() > 0 {
					b.WriteString(" UNION ALL ")
				}
				// A token whose lexeme an earlier token has already
				// reads nothing (array_position finds the first).
				b.WriteString(`(SELECT t.created_at, t.id, t.lexeme, t.tf, t.len FROM memory_terms t
					WHERE t.scope = (SELECT k[` + strconv.Itoa(i+1) + `] FROM p) AND t.lexeme = (SELECT ` + lx + ` FROM p)
					AND (SELECT array_position(lx, ` + lx + `) = ` + strconv.Itoa(j+1) + ` FROM p)` + orphans + `
					ORDER BY t.created_at DESC, t.id DESC)`)
			}
		}
		w = `p AS MATERIALIZED (SELECT ARRAY[` + strings.Join(lexemes, ", ") + `]::text[] AS lx,
				ARRAY[` + strings.Join(keys, ", ") + `]::bigint[] AS k),
			w AS MATERIALIZED (SELECT created_at, id, lexeme, tf, len, n FROM (
				SELECT l.*, dense_rank() OVER (ORDER BY l.created_at DESC, l.id DESC) AS n
				FROM (` + b.String() + `) AS l) AS x
				WHERE n <= ` + capRef + `)`
	} else {
		tsq := sq.Render(func(tok string) string {
			return "plainto_tsquery('english', " + params[tok] + "::text)"
		}, " && ", " || ")
		w = `p AS MATERIALIZED (SELECT ARRAY[` + strings.Join(lexemes, ", ") + `]::text[] AS lx),
			w AS MATERIALIZED (SELECT x.created_at, x.id, u.lexeme, u.tf, u.len, x.n
				FROM (SELECT y.*, row_number() OVER (ORDER BY y.created_at DESC, y.id DESC) AS n FROM (
					SELECT m.created_at, m.id, m.tsv FROM memories m, (SELECT ` + tsq + `) AS q(query)
					WHERE m.tsv @@ q.query AND ` + filter + `
					ORDER BY m.created_at DESC, m.id DESC LIMIT ` + capRef + `) AS y) AS x
				CROSS JOIN LATERAL memory_term_rows(x.tsv) AS u, p
				WHERE u.lexeme = ANY (p.lx))`
	}
	return `WITH ` + w + `,
		mem AS (SELECT n, min(len) AS len FROM w GROUP BY n),
		tot AS (SELECT count(*)::float8 AS docs, avg(len)::float8 AS avglen FROM mem),
		df AS (SELECT lexeme, count(*)::float8 AS df FROM w GROUP BY lexeme),
		sc AS (SELECT w.n, w.created_at, w.id, sum(ln(1 + (tot.docs - df.df + 0.5) / (df.df + 0.5))
				* w.tf * (` + bm25K1 + ` + 1) / (w.tf + ` + bm25K1 + ` * (1 - ` + bm25B + ` + ` + bm25B + ` * w.len / tot.avglen))
				ORDER BY w.lexeme) AS score
			FROM w JOIN df ON df.lexeme = w.lexeme CROSS JOIN tot GROUP BY w.n, w.created_at, w.id)
		SELECT ` + columns + `, top.score, top.docs::bigint
		FROM (SELECT sc.*, tot.docs FROM sc, tot ORDER BY sc.score DESC, sc.created_at DESC, sc.id DESC LIMIT ` + limitRef + `) AS top
		CROSS JOIN LATERAL (SELECT * FROM memories m WHERE m.tenant = $1 AND m.id = top.id OFFSET 0) AS m
		ORDER BY top.score DESC, top.created_at DESC, top.id DESC`, args
}

// lightColumns are the columns of a light candidate (store.SearchQuery.Light).
const lightColumns = `m.id, m.tenant, m.layer, m.scope_id, m.content, m.created_at`

// BM25 parameters as SQL literals: backend.Ranking's.
var (
	bm25K1 = strconv.FormatFloat(backend.BM25K1, 'g', -1, 64)
	bm25B  = strconv.FormatFloat(backend.BM25B, 'g', -1, 64)
)

// maxTermLists bounds the scoped term lists (tokens × scopes) one search
// merges; beyond it the statement and its plan grow more than the GIN
// index costs.
const maxTermLists = 64

// termLists reports whether textWindow reads the scoped term lists.
func termLists(sq backend.Search) bool {
	return sq.Groups == nil && len(sq.Tags) == 0 && len(sq.Tokens)*len(sq.Scopes) <= maxTermLists
}

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
