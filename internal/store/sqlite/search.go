package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/toolsvc/toolsvc/internal/base/words"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// SearchMemories implements store.MemoryStore.
//
// With terms, the FTS5 MATCH of the caller's scoped terms (scopedMatch;
// terms.go: every indexed word carries its memory's scope) drives the
// query newest first (CROSS JOIN pins it as the outer loop; FTS5 walks its
// doclists by ascending rowid, which is newest first because seqs
// descend, migration 0003), so the walk reads the caller's matches and
// nothing else; each row is joined to its memory by rowid and checked for
// tenant, scope, tags and orphan state, and the walk stops after
// store.MatchedCap+1 rows in scope. Ascending is FTS5's cheaper
// direction: its reverse iterators decode each leaf page backwards, at
// about 1.5 times the cost. That window is ranked in Go by BM25 over its own
// statistics (backend.BM25) and only the best CandidateLimit rows are read
// in full (with Light, not even those: the window has what ranking reads).
// FTS5's bm25() is not used: it computes each term's document frequency by
// walking the term's whole doclist on every query, a cost that grows with
// the store (and was most of a search's time). A search therefore costs at
// most the window, however large the store.
// Without terms, each scope's index range is read newest first and stops
// after the limit; the k-way merge of those short lists is cheap. Matched
// comes from a count that stops at store.MatchedCap+1, in the same read
// transaction, so Matched and Candidates come from one snapshot.
func (s *Store) SearchMemories(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	sq, err := backend.PrepareSearch(q)
	if err != nil {
		return store.SearchResult{}, err
	}
	res := store.SearchResult{Candidates: []store.Candidate{}}
	if sq.MatchesNothing() {
		return res, nil
	}
	if sq.Text {
		return s.searchText(ctx, sq, res)
	}
	tx, end, err := s.readTx(ctx, "SearchMemories")
	if err != nil {
		return store.SearchResult{}, err
	}
	defer end()

	parts := make([]string, len(sq.Scopes))
	var listArgs []any
	for i, sc := range sq.Scopes {
		f, args := searchFilter(sq, []store.Scope{sc})
		parts[i] = `SELECT * FROM (SELECT ` + memoryColumns + `, 0.0 AS score FROM memories m WHERE ` + f + `
			ORDER BY m.created_at DESC, m.id DESC LIMIT ?)`
		listArgs = append(append(listArgs, args...), sq.Limit)
	}
	listQuery := `SELECT * FROM (` + strings.Join(parts, ` UNION ALL `) + `) ORDER BY created_at DESC, id DESC LIMIT ?`
	listArgs = append(listArgs, sq.Limit)
	filter, filterArgs := searchFilter(sq, sq.Scopes)
	countQuery := `SELECT count(*) FROM (SELECT 1 FROM memories m WHERE ` + filter + ` LIMIT ?)`
	countArgs := append(slices.Clone(filterArgs), store.MatchedCap+1)

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
		res.Candidates = append(res.Candidates, store.Candidate{Memory: m})
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

// searchText runs a full-text search (see SearchMemories) in one read
// transaction: the window of matches, then the full rows of its best.
func (s *Store) searchText(ctx context.Context, sq backend.Search, res store.SearchResult) (store.SearchResult, error) {
	filter, filterArgs := searchFilter(sq, sq.Scopes)
	which, whichArgs := whichScope(sq.Scopes)
	window := `SELECT m.seq, m.content, m.created_at, m.id, ` + which + `
		FROM memories_fts CROSS JOIN memories m ON m.seq = memories_fts.rowid
		WHERE memories_fts MATCH ? AND ` + filter + `
		ORDER BY memories_fts.rowid ASC LIMIT ` + windowLimit
	args := make([]any, 0, len(whichArgs)+len(filterArgs)+1)
	args = append(append(append(args, whichArgs...), scopedMatch(sq)), filterArgs...)

	// Both statements come from the cache before the transaction takes a
	// reader: preparing one needs a connection of the pool, and searches
	// that each held one inside a transaction while waiting to prepare
	// deadlocked once they held them all. The window's text varies only
	// with the number of scopes and tags and the orphan filter, so the
	// cache stays small.
	stmt, err := s.readerStmts.stmt(ctx, window)
	if err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	bySeq, err := s.readerStmts.stmt(ctx, bySeqSQL)
	if err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	tx, end, err := s.readTx(ctx, "SearchMemories")
	if err != nil {
		return store.SearchResult{}, err
	}
	defer end()
	type match struct {
		seq       int64
		createdAt int64
		id        string
		scope     int // in sq.Scopes
	}
	var matches []match
	var contents []string
	rank := newWindowRanking(sq.Tokens)
	defer rank.stop()
	rows, err := tx.StmtContext(ctx, stmt).QueryContext(ctx, args...)
	if err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	for rows.Next() {
		var m match
		var content string
		if err := rows.Scan(&m.seq, &content, &m.createdAt, &m.id, &m.scope); err != nil {
			_ = rows.Close()
			return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
		}
		if len(matches) < store.MatchedCap {
			// The row past the cap only tells that there are more.
			rank.add(content)
		}
		matches, contents = append(matches, m), append(contents, content)
	}
	if err := rows.Err(); err != nil {
		return store.SearchResult{}, s.fail(ctx, "SearchMemories", err)
	}
	if len(matches) > store.MatchedCap {
		matches, contents = matches[:store.MatchedCap], contents[:store.MatchedCap]
		res.Capped = true
	}
	res.Matched = len(matches)
	if len(matches) == 0 {
		return res, nil
	}

	// Best first: by relevance, then newest.
	scores := rank.scores()
	order := make([]int, len(matches))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		// Each key only on a tie of the ones before (cmp.Or would compare
		// the ids every time).
		if c := cmp.Compare(scores[b], scores[a]); c != 0 {
			return c
		}
		if c := cmp.Compare(matches[b].createdAt, matches[a].createdAt); c != 0 {
			return c
		}
		return strings.Compare(matches[b].id, matches[a].id)
	})
	order = order[:min(len(order), sq.Limit)]
	if sq.Light {
		// What ranking reads is in the window already.
		res.Light = true
		for _, k := range order {
			m := matches[k]
			sc := sq.Scopes[m.scope]
			res.Candidates = append(res.Candidates, store.Candidate{Memory: store.Memory{
				Tenant: sq.Tenant, ID: m.id, Layer: sc.Layer, ScopeID: sc.ScopeID,
				Content: contents[k], CreatedAt: backend.FromMicros(m.createdAt),
			}, Relevance: scores[k]})
		}
		return res, nil
	}
	seqs := make([]int64, len(order))
	for i, k := range order {
		seqs[i] = matches[k].seq
	}
	full, err := s.memoriesBySeq(ctx, tx.StmtContext(ctx, bySeq), seqs)
	if err != nil {
		return store.SearchResult{}, err
	}
	for i, k := range order {
		if m, ok := full[seqs[i]]; ok {
			res.Candidates = append(res.Candidates, store.Candidate{Memory: m, Relevance: scores[k]})
		}
	}
	return res, nil
}

// windowRanking counts the words of a window's rows for BM25
// (backend.Ranking) while the rest of the window is read: in batches of
// rankBatch rows, on a goroutine of its own started at the first full
// batch. Counting a full window's words is a small part of the search;
// the store's walk, which it overlaps, is several times that (measured:
// docs/BENCHMARKS.md, "Design measurements"). A window of
// fewer rows is counted on the caller's goroutine at the end.
type windowRanking struct {
	rank  *backend.Ranking
	batch []string
	// batches carries full batches to the counting goroutine, which
	// closes done once batches is closed and drained.
	batches chan []string
	done    chan struct{}
}

// rankBatch is the rows counted together: a handful of hand-overs per
// window, and a small window never starts the goroutine.
const rankBatch = 128

func newWindowRanking(tokens []string) *windowRanking {
	return &windowRanking{rank: backend.NewRanking(tokens)}
}

// add counts content, now or on the counting goroutine.
func (w *windowRanking) add(content string) {
	if w.batch == nil {
		w.batch = make([]string, 0, rankBatch)
	}
	w.batch = append(w.batch, content)
	if len(w.batch) < rankBatch {
		return
	}
	if w.batches == nil {
		w.batches, w.done = make(chan []string, store.MatchedCap/rankBatch+1), make(chan struct{})
		go func() {
			defer close(w.done)
			for b := range w.batches {
				for _, d := range b {
					w.rank.Add(d)
				}
			}
		}()
	}
	w.batches <- w.batch
	w.batch = nil
}

// scores waits for the counting goroutine, counts the last partial batch
// and returns the scores of every content added, in order.
func (w *windowRanking) scores() []float64 {
	w.stop()
	for _, d := range w.batch {
		w.rank.Add(d)
	}
	w.batch = nil
	return w.rank.Scores()
}

// stop ends the counting goroutine, if any, and waits for it. It may be
// called more than once.
func (w *windowRanking) stop() {
	if w.batches != nil {
		close(w.batches)
		<-w.done
		w.batches = nil
	}
}

// windowLimit is the window's LIMIT, store.MatchedCap+1, written into the
// statement's text rather than bound: SQLite plans a bound LIMIT with its
// value and marks the statement for preparing again whenever the value
// bound differs from the one its plan saw.
var windowLimit = strconv.Itoa(store.MatchedCap + 1)

// bySeqSQL reads memories by rowid from a JSON array, so that one
// prepared statement serves any number of them.
const bySeqSQL = `SELECT ` + memoryColumns + `, m.seq FROM memories m WHERE m.seq IN (SELECT value FROM json_each(?))`

// memoriesBySeq returns the memories of seqs keyed by seq, read with
// bySeq (bySeqSQL in the caller's transaction).
func (s *Store) memoriesBySeq(ctx context.Context, bySeq *sql.Stmt, seqs []int64) (map[int64]store.Memory, error) {
	list, err := json.Marshal(seqs)
	if err != nil {
		return nil, err
	}
	rows, err := bySeq.QueryContext(ctx, string(list))
	if err != nil {
		return nil, s.fail(ctx, "SearchMemories", err)
	}
	defer rows.Close()
	out := make(map[int64]store.Memory, len(seqs))
	for rows.Next() {
		var seq int64
		m, err := scanMemory(rows, &seq)
		if err != nil {
			return nil, s.fail(ctx, "SearchMemories", err)
		}
		out[seq] = m
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "SearchMemories", err)
	}
	return out, nil
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

// whichScope renders, on alias m, the position in scopes of a row's
// scope (NULL for none; the search filter leaves no such row). A window
// row reads this small integer instead of its layer and scope id, two
// strings the search knows already, which cost a full window measurably
// more (measured: docs/BENCHMARKS.md, "Design measurements").
func whichScope(scopes []store.Scope) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, 2*len(scopes))
	b.WriteString(`CASE`)
	for i, sc := range scopes {
		b.WriteString(` WHEN m.layer = ? AND m.scope_id = ? THEN ` + strconv.Itoa(i))
		args = append(args, string(sc.Layer), sc.ScopeID)
	}
	b.WriteString(` END`)
	return b.String(), args
}

// scopedMatch is the FTS5 query of a text search: each search token
// becomes the OR of its stem's scoped term (terms.go) in each of the
// caller's scopes, and the tokens are OR-ed, or with Groups AND-ed in
// groups (backend.Search.Render). A memory has one scope, so a group's
// tokens all match in the same one. A term holds only its scope's
// memories, so one tenant's writes never enter another's walk; the
// join still checks tenant and scope exactly.
func scopedMatch(sq backend.Search) string {
	keys := make([]string, len(sq.Scopes))
	for i, sc := range sq.Scopes {
		keys[i] = scopeKey(sq.Tenant, sc)
	}
	var b strings.Builder
	term := func(tok string) string {
		stem := words.Stem(tok)
		if stem == "" {
			stem = tok
		}
		b.Reset()
		b.WriteByte('(')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(" OR ")
			}
			// Scoped terms are ASCII letters and digits: quoting only
			// keeps FTS5 from reading one as a keyword or column.
			b.WriteByte('"')
			writeScopedTerm(&b, k, stem)
			b.WriteByte('"')
		}
		b.WriteByte(')')
		return b.String()
	}
	return sq.Render(term, " AND ", " OR ")
}

// scopeKey is the scope's prefix of its scoped terms, as migration 0002's
// generated column scope_key computes it: 'k' and the lower-case hex of
// tenant, layer and scope id joined by U+001F.
func scopeKey(tenant string, sc store.Scope) string {
	return "k" + hex.EncodeToString([]byte(tenant+"\x1f"+string(sc.Layer)+"\x1f"+sc.ScopeID))
}
