package postgres

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"go.opentelemetry.io/otel/attribute"

	"github.com/toolsvc/toolsvc/internal/base/spans"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// SearchMemories implements store.MemoryStore.
//
// Each token becomes plainto_tsquery('english', $n): bound as a parameter
// and parsed as plain text, so no tsquery operator in a term is ever
// interpreted. The tsqueries are OR-ed (or AND-ed in groups, see
// store.SearchQuery.MinMatch); the newest store.MatchedCap+1 matches in
// scope form the window (textWindow says how the matches are found), which
// searchText ranks by BM25 and reads the best of. Without terms, rows come
// newest first and a separate count stops at store.MatchedCap+1 rows.
func (s *Store) SearchMemories(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	return s.search(ctx, q, termLists, nil)
}

// search is SearchMemories, reading the scoped term lists when lists says
// so of the search (see textWindow); a text search calls between, if not
// nil, after its window and before it reads the best memories (tests
// change memories there).
func (s *Store) search(ctx context.Context, q store.SearchQuery, lists func(backend.Search) bool, between func()) (store.SearchResult, error) {
	sq, err := backend.PrepareSearch(q)
	if err != nil {
		return store.SearchResult{}, err
	}
	res := store.SearchResult{Candidates: []store.Candidate{}}
	if sq.MatchesNothing() {
		return res, nil
	}
	if sq.Text {
		return s.searchText(ctx, sq, lists(sq), between)
	}
	filter, args := searchFilter(sq)
	args = append(args, sq.Limit)
	rows, err := s.pool.Query(ctx, `SELECT `+memoryColumns+` FROM memories m WHERE `+filter+`
		ORDER BY m.created_at DESC, m.id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err == nil {
		res.Candidates, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Candidate, error) {
			m, err := scanMemory(r)
			return store.Candidate{Memory: m}, err
		})
	}
	if err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	if res.Candidates == nil {
		res.Candidates = []store.Candidate{}
	}
	var matched int64
	filter, args = searchFilter(sq)
	args = append(args, store.MatchedCap+1)
	err = s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM memories m WHERE `+filter+`
		LIMIT $`+strconv.Itoa(len(args))+`) AS capped`, args...).Scan(&matched)
	if err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	res.Matched = int(matched)
	if res.Matched > store.MatchedCap {
		res.Matched, res.Capped = store.MatchedCap, true
	}
	return res, nil
}

// searchText runs a text search: textWindow's statement (through the
// scoped term lists when lists says so, under pinTermListPlan) returns
// the window's term rows, which are ranked here by BM25 on the window's
// own statistics (backend.BM25Counts, the formula SQLite ranks with); a
// second statement reads the best sq.Limit memories, in full or light
// (sq.Light), again under the search's filter, so a memory deleted,
// moved out of the caller's scopes, orphaned or untagged in between is
// left out (between, if not nil, runs in between). Ranked by the
// statement itself, the window's grouping, sorting and aggregates cost
// PostgreSQL several times what reading the rows and ranking them here
// costs the service (measured: docs/BENCHMARKS.md, "Design measurements").
func (s *Store) searchText(ctx context.Context, sq backend.Search, lists bool, between func()) (store.SearchResult, error) {
	filter, filterArgs := searchFilter(sq)
	query, args := textWindow(sq, filter, slices.Clone(filterArgs), lists)
	win := window{terms: len(sq.Tokens)}
	var err error
	wctx, span := spans.Start(ctx, "postgres.window")
	if lists {
		err = s.pinnedQuery(wctx, query, args, win.read)
	} else {
		err = s.query(wctx, query, args, win.read)
	}
	if err != nil {
		spans.Fail(span, "store")
	} else if span.IsRecording() {
		span.SetAttributes(attribute.Bool("toolsvc.postgres.term_lists", lists), attribute.Int("toolsvc.memory.window", len(win.ids)))
	}
	span.End()
	if err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	res := store.SearchResult{Candidates: []store.Candidate{}, Light: sq.Light}
	win.rank()
	res.Matched = len(win.ids)
	if res.Matched > store.MatchedCap {
		res.Matched, res.Capped = store.MatchedCap, true
	}
	best := win.best(sq.Limit)
	if len(best) == 0 {
		return res, nil
	}
	ids := make([]string, len(best))
	for i, k := range best {
		ids[i] = win.ids[k]
	}
	if between != nil {
		between()
	}
	columns, scan := memoryColumns, func(r pgx.CollectableRow) (store.Memory, error) { return scanMemory(r) }
	if sq.Light {
		columns, scan = lightColumns, scanLight
	}
	filterArgs = append(filterArgs, ids)
	rctx, span := spans.Start(ctx, "postgres.candidates")
	read, err := s.pool.Query(rctx, `SELECT `+columns+` FROM memories m WHERE `+filter+`
		AND m.id = ANY($`+strconv.Itoa(len(filterArgs))+`::text[])`, filterArgs...)
	var ms []store.Memory
	if err == nil {
		ms, err = pgx.CollectRows(read, scan)
	}
	if err != nil {
		spans.Fail(span, "store")
	} else if span.IsRecording() {
		span.SetAttributes(attribute.Int("toolsvc.memory.rows_read", len(ms)), attribute.Bool("toolsvc.memory.light", sq.Light))
	}
	span.End()
	if err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	byID := make(map[string]store.Memory, len(ms))
	for _, m := range ms {
		byID[m.ID] = m
	}
	for _, k := range best {
		if m, ok := byID[win.ids[k]]; ok {
			res.Candidates = append(res.Candidates, store.Candidate{Memory: m, Relevance: max(0, win.scores[k])})
		}
	}
	return res, nil
}

// scanLight reads a row of lightColumns.
func scanLight(r pgx.CollectableRow) (store.Memory, error) {
	var (
		m       store.Memory
		layer   string
		created time.Time
	)
	err := r.Scan(&m.ID, &m.Tenant, &layer, &m.ScopeID, &m.Content, &created)
	m.Layer, m.CreatedAt = store.Layer(layer), backend.Normalize(created)
	return m, err
}

// window is a text search's window: its memories in window order (newest
// first), each with its age, length and count of each of the search's
// terms, then its BM25 score (rank).
type window struct {
	terms   int
	ids     []string
	created []int64 // microseconds, compared only
	lengths []int
	tf      []int // the memory's count of term j at [i*terms+j]
	scores  []float64
}

// read reads textWindow's rows into w. It decodes the binary values
// itself (pgx.Rows.RawValues) and makes a memory's id a string once,
// however many of its terms it holds: scanning the rows (up to a few
// thousand a search, most for a window's 1,001 memories) cost more than
// PostgreSQL's ranking they replace. A result in another format is
// scanned.
func (w *window) read(rows pgx.Rows) error {
	defer rows.Close()
	// n bigint, created_at timestamptz, term, tf and len integer, each
	// binary; id text, whose text and binary forms are its bytes.
	fields := rows.FieldDescriptions()
	raw := len(fields) == len(windowTypes)
	for i, f := range fields {
		raw = raw && f.DataTypeOID == windowTypes[i] && (f.Format == pgx.BinaryFormatCode || f.DataTypeOID == pgtype.TextOID)
	}
	for rows.Next() {
		var (
			n, created  int64
			term, tf, l int32
			id          string
			vals        = rows.RawValues()
		)
		if raw {
			if len(vals[0]) != 8 || len(vals[1]) != 8 || len(vals[3]) != 4 || len(vals[4]) != 4 || len(vals[5]) != 4 {
				return errors.New("window row: unexpected binary value")
			}
			n, created = int64(binary.BigEndian.Uint64(vals[0])), int64(binary.BigEndian.Uint64(vals[1]))
			term, tf, l = int32(binary.BigEndian.Uint32(vals[3])), int32(binary.BigEndian.Uint32(vals[4])), int32(binary.BigEndian.Uint32(vals[5]))
		} else {
			var t time.Time
			if err := rows.Scan(&n, &t, &id, &term, &tf, &l); err != nil {
				return err
			}
			created = t.UnixMicro()
		}
		if n < 1 || n > store.MatchedCap+1 || term < 0 || int(term) >= w.terms {
			return fmt.Errorf("window row: memory %d, term %d out of range", n, term)
		}
		i := int(n) - 1
		for len(w.ids) <= i {
			w.ids, w.created, w.lengths = append(w.ids, ""), append(w.created, 0), append(w.lengths, 0)
			w.tf = append(w.tf, make([]int, w.terms)...)
		}
		if w.ids[i] == "" {
			if raw {
				id = string(vals[2])
			}
			w.ids[i], w.created[i], w.lengths[i] = id, created, int(l)
		}
		w.tf[i*w.terms+int(term)] = int(tf)
	}
	return rows.Err()
}

// windowTypes are the types of textWindow's columns.
var windowTypes = []uint32{pgtype.Int8OID, pgtype.TimestamptzOID, pgtype.TextOID, pgtype.Int4OID, pgtype.Int4OID, pgtype.Int4OID}

// rank scores the window's memories by BM25 on its own statistics.
func (w *window) rank() { w.scores = backend.BM25Counts(w.tf, w.lengths, w.terms) }

// best returns the positions of the limit best memories: by score, then
// newest, then id.
func (w window) best(limit int) []int {
	order := make([]int, len(w.ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(w.scores[b], w.scores[a]); c != 0 {
			return c
		}
		if c := cmp.Compare(w.created[b], w.created[a]); c != 0 {
			return c
		}
		return strings.Compare(w.ids[b], w.ids[a])
	})
	return order[:min(limit, len(order))]
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
// window's numbering) can exceed jit_above_cost: JIT is turned off too (it
// compiled for 0.4 s).
const pinTermListPlan = `SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true),
	set_config('enable_sort', 'off', true), set_config('jit', 'off', true)`

// textWindow renders the statement of a text search's window with
// searchFilter's filter, appending its parameters to args (the filter's);
// lists chooses the scoped term lists over the GIN index. The window is the
// newest store.MatchedCap+1 matches in scope, and the statement answers
// what ranking them by BM25 needs (windowRow): a row for each memory of the
// window and each term of the search it holds, with the memory's place in
// the window (n, from 1 newest first), age and id, the term's position in
// sq.Tokens, its frequency and the memory's length. Each word of the
// search counts as its lexeme, a memory's frequency of it is the lexeme's
// positions in tsv, a memory's length all its positions. Both ways below
// answer the same rows.
//
// OR-ed tokens without tags (a search's usual form) read the scoped term
// lists of migration 0008: for each token and each of the caller's scopes
// the B-tree lists the memories holding the token's lexeme newest first,
// each with its frequency and length. The lists are merged (Merge Append)
// and numbered by memory (dense_rank), and the merge stops at the window's
// size (the window function's run condition): the window and what ranks
// it come from the index alone, and searchText reads only the memories it
// keeps. A
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
	// Each token is bound once: the groups use some, the lexemes all.
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
				b.WriteString(`(SELECT t.created_at, t.id, ` + strconv.Itoa(j) + ` AS term, t.tf, t.len FROM memory_terms t
					WHERE t.scope = (SELECT k[` + strconv.Itoa(i+1) + `] FROM p) AND t.lexeme = (SELECT ` + lx + ` FROM p)
					AND (SELECT array_position(lx, ` + lx + `) = ` + strconv.Itoa(j+1) + ` FROM p)` + orphans + `
					ORDER BY t.created_at DESC, t.id DESC)`)
			}
		}
		w = `p AS MATERIALIZED (SELECT ARRAY[` + strings.Join(lexemes, ", ") + `]::text[] AS lx,
				ARRAY[` + strings.Join(keys, ", ") + `]::bigint[] AS k),
			w AS (SELECT n, created_at, id, term, tf, len FROM (
				SELECT l.*, dense_rank() OVER (ORDER BY l.created_at DESC, l.id DESC) AS n
				FROM (` + b.String() + `) AS l) AS x
				WHERE n <= ` + capRef + `)`
	} else {
		tsq := sq.Render(func(tok string) string {
			return "plainto_tsquery('english', " + params[tok] + "::text)"
		}, " && ", " || ")
		w = `p AS MATERIALIZED (SELECT ARRAY[` + strings.Join(lexemes, ", ") + `]::text[] AS lx),
			w AS (SELECT x.n, x.created_at, x.id, array_position(p.lx, u.lexeme) - 1 AS term, u.tf, u.len
				FROM (SELECT y.*, row_number() OVER (ORDER BY y.created_at DESC, y.id DESC) AS n FROM (
					SELECT m.created_at, m.id, m.tsv FROM memories m, (SELECT ` + tsq + `) AS q(query)
					WHERE m.tsv @@ q.query AND ` + filter + `
					ORDER BY m.created_at DESC, m.id DESC LIMIT ` + capRef + `) AS y) AS x
				CROSS JOIN LATERAL memory_term_rows(x.tsv) AS u, p
				WHERE u.lexeme = ANY (p.lx))`
	}
	return `WITH ` + w + ` SELECT * FROM w`, args
}

// lightColumns are the columns of a light candidate (store.SearchQuery.Light).
const lightColumns = `m.id, m.tenant, m.layer, m.scope_id, m.content, m.created_at`

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
