package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
	"github.com/toolsvc/toolsvc/internal/store/postgres"
)

// termWords is the test corpus's vocabulary: word families that stem
// together, words PostgreSQL drops (stop words) or reads as numbers, words
// outside ASCII, and fillers whose frequencies fall steeply, so that the
// first ones fill a window (store.MatchedCap) and the last ones are rare.
var termWords = func() []string {
	out := []string{"run", "runs", "running", "runner", "deploy", "deploys", "deployment",
		"database", "databases", "Kafka", "the", "about", "2024", "v2", "café", "naïve", "項目", "Straße"}
	for i := range 30 {
		out = append(out, fmt.Sprintf("w%dx", i))
	}
	return out
}()

// termContent is a memory of 4-12 words of termWords, the fillers skewed
// to the first.
func termContent(r *rand.Rand) string {
	ws := make([]string, 4+r.IntN(9))
	for i := range ws {
		if r.IntN(3) == 0 {
			ws[i] = termWords[r.IntN(18)]
		} else {
			ws[i] = termWords[18+r.IntN(r.IntN(30)+1)]
		}
	}
	return strings.Join(ws, " ")
}

// TestTermListsMatchGIN checks the scoped term lists of migration 0008
// against the memories after each kind of write (checkTermRows), and
// compares every search answered through them with the same search
// through the GIN index (postgres.SearchGIN): the same window, matches,
// order and scores, over two tenants sharing words and scope ids, windows
// that fill and windows that do not, orphans, pointers rewritten and moved
// to another scope, deletes, and memories added together (one creation
// time, ordered by id).
func TestTermListsMatchGIN(t *testing.T) {
	cfg := freshSchema(t)
	s := openConfig(t, cfg)
	pool := newPool(t, cfg)
	ctx := t.Context()
	r := rand.New(rand.NewPCG(8, 8))
	scopes := []store.Scope{{Layer: store.LayerUser, ScopeID: "u1"}, {Layer: store.LayerUser, ScopeID: "u2"},
		{Layer: store.LayerProject, ScopeID: "p1"}, {Layer: store.LayerCompany, ScopeID: "c"}}
	memory := func(tenant string) *store.Memory {
		sc := scopes[r.IntN(len(scopes))]
		return &store.Memory{Tenant: tenant, Layer: sc.Layer, ScopeID: sc.ScopeID, Content: termContent(r)}
	}

	var ids []string
	for _, tenant := range []string{"t1", "t1", "t1", "t1", "t2", "t2"} {
		batch := make([]*store.Memory, 500)
		for i := range batch {
			batch[i] = memory(tenant)
		}
		if err := s.AddMemories(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for _, m := range batch {
			if m.Tenant == "t1" {
				ids = append(ids, m.ID)
			}
		}
	}
	for range 200 {
		m := memory("t1")
		if err := s.AddMemory(ctx, m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	checkTermRows(t, pool)

	var kids []string
	var pointers []*store.Memory
	for i := range 60 {
		m := memory("t1")
		m.KnowledgeItemID, m.SourceType = fmt.Sprint("adr-", i), store.SourceKnowledgeSync
		if _, err := s.UpsertPointer(ctx, m); err != nil {
			t.Fatal(err)
		}
		kids, pointers = append(kids, m.KnowledgeItemID), append(pointers, m)
	}
	for _, kid := range kids[:30] {
		m := memory("t1") // new content, often another scope
		m.KnowledgeItemID, m.SourceType = kid, store.SourceKnowledgeSync
		if _, err := s.UpsertPointer(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range pointers[40:] { // the same content, another scope
		moved := *p
		moved.ID, moved.Layer, moved.ScopeID = "", scopes[i%len(scopes)].Layer, scopes[i%len(scopes)].ScopeID
		if moved.Layer == p.Layer && moved.ScopeID == p.ScopeID {
			moved.Layer, moved.ScopeID = store.LayerProject, "p2"
		}
		if _, err := s.UpsertPointer(ctx, &moved); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.MarkOrphaned(ctx, "t1", kids[20:40]); err != nil {
		t.Fatal(err)
	}
	for range 150 {
		if err := s.DeleteMemory(ctx, "t1", ids[r.IntN(len(ids))]); err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
	}
	checkTermRows(t, pool)

	var capped, partial, empty int
	for i := range 300 {
		q := store.SearchQuery{Tenant: "t1", IncludeOrphaned: r.IntN(2) == 0,
			CandidateLimit: []int{0, 5, 50, store.MaxCandidateLimit}[r.IntN(4)]}
		if i%10 == 9 {
			q.Tenant = "t2"
		}
		for range 1 + r.IntN(4) {
			q.Terms = append(q.Terms, termWords[r.IntN(len(termWords))])
		}
		if i%7 == 0 {
			q.Terms = append(q.Terms, "absentword")
		}
		for _, sc := range scopes {
			if r.IntN(3) > 0 {
				q.Scopes = append(q.Scopes, sc)
			}
		}
		if i%11 == 0 {
			q.Scopes = append(q.Scopes, store.Scope{Layer: store.LayerUser, ScopeID: "u9"}) // no memories
		}
		if !postgres.UsesTermLists(q) && len(q.Scopes) > 0 {
			t.Fatalf("search %+v does not read the term lists", q)
		}
		got, err := s.SearchMemories(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.SearchGIN(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case got.Capped:
			capped++
		case got.Matched == 0:
			empty++
		default:
			partial++
		}
		if got.Matched != want.Matched || got.Capped != want.Capped || len(got.Candidates) != len(want.Candidates) {
			t.Fatalf("search %+v: term lists matched %d (capped %v) with %d candidates, GIN %d (capped %v) with %d",
				q, got.Matched, got.Capped, len(got.Candidates), want.Matched, want.Capped, len(want.Candidates))
		}
		for j, c := range got.Candidates {
			w := want.Candidates[j]
			if c.Memory.ID != w.Memory.ID || c.Relevance != w.Relevance {
				t.Fatalf("search %+v: candidate %d is %s (%g), GIN has %s (%g)", q, j, c.Memory.ID, c.Relevance, w.Memory.ID, w.Relevance)
			}
		}
	}
	// The comparison must have covered full windows, partial ones and
	// empty ones.
	if capped < 10 || partial < 10 || empty < 3 {
		t.Fatalf("searches: %d capped, %d partial, %d empty; the corpus no longer covers each kind", capped, partial, empty)
	}
}

// TestMigrationFillsTermLists builds a schema as migration 0007 left it,
// with memories of two tenants in several scopes, and checks that opening
// it (migration 0008) fills the term lists from them and that searches
// read them.
func TestMigrationFillsTermLists(t *testing.T) {
	cfg := freshSchema(t)
	conn, err := pgx.ConnectConfig(t.Context(), cfg.ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("migrations", "000[1-7]_*.sql"))
	if err != nil || len(files) != 7 {
		t.Fatalf("migrations 0001-0007: %v %v", files, err)
	}
	for i, f := range files {
		sql, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(t.Context(), string(sql)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := conn.Exec(t.Context(), `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, i+1, filepath.Base(f)); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(9, 9))
	for i := range 300 {
		tenant, layer, scope := []string{"t1", "t2"}[i%2], []string{"user", "project", "company"}[r.IntN(3)], fmt.Sprint("s", r.IntN(3))
		if _, err := conn.Exec(t.Context(), `INSERT INTO memories (tenant, id, layer, scope_id, content, source_type, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, 'manual', now() - $6 * interval '1 second', now())`,
			tenant, fmt.Sprint("m", i), layer, scope, termContent(r), i); err != nil {
			t.Fatal(err)
		}
	}

	s := openConfig(t, cfg)
	pool := newPool(t, cfg)
	checkTermRows(t, pool)
	q := store.SearchQuery{Tenant: "t1", Terms: []string{"running", "w3x"},
		Scopes: []store.Scope{{Layer: store.LayerUser, ScopeID: "s1"}, {Layer: store.LayerCompany, ScopeID: "s0"}}}
	got, err := s.SearchMemories(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.SearchGIN(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	if got.Matched == 0 || got.Matched != want.Matched {
		t.Fatalf("after the migration: %d matches through the term lists, %d through GIN", got.Matched, want.Matched)
	}
}

// TestTermListsPlanIsPinned checks the plan of a term-list window: each
// list read newest first from the B-tree, the lists merged in order and
// numbered until the window is full (a run condition), no memory read;
// nothing that reads a whole list (a bitmap or
// sequential scan, a sort) whatever the lists' lengths. The
// settings that pin it must not outlive the search: the pool's one
// connection has the server's settings afterwards.
func TestTermListsPlanIsPinned(t *testing.T) {
	cfg := freshSchema(t)
	s, err := postgres.OpenConfig(t.Context(), cfg, store.WithMaxConns(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	defaults := map[string]string{}
	for _, name := range []string{"enable_bitmapscan", "enable_sort", "enable_hashagg", "enable_hashjoin", "enable_mergejoin", "enable_seqscan", "jit"} {
		if defaults[name], err = s.Setting(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(10, 10))
	batch := make([]*store.Memory, 1200) // a bulk load this size analyzes the tables
	for i := range batch {
		batch[i] = &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: fmt.Sprint("u", i%3), Content: termContent(r)}
	}
	if err := s.AddMemories(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// The bulk load vacuumed the lists, so that their pages are marked
	// all-visible and a list is read from its index alone. (Whether a page
	// is marked depends on the other transactions of the server, which
	// other tests share.)
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var vacuums int
	if err := conn.QueryRow(ctx, `SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'memory_terms'::regclass`).Scan(&vacuums); err != nil {
		t.Fatal(err)
	}
	if vacuums != 1 {
		t.Errorf("memory_terms vacuumed %d times by a bulk load, want 1", vacuums)
	}
	q := store.SearchQuery{Tenant: "t1", Terms: []string{"w0x", "deploy"},
		Scopes: []store.Scope{{Layer: store.LayerUser, ScopeID: "u0"}, {Layer: store.LayerUser, ScopeID: "u1"}}}
	plan, err := s.ExplainTermLists(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Merge Append", "Run Condition: (dense_rank()"} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan has no %s:\n%s", want, plan)
		}
	}
	if n := strings.Count(plan, "Scan Backward using memory_terms_pkey"); n != 4 {
		t.Errorf("plan reads %d lists newest first, want 4:\n%s", n, plan)
	}
	// The window comes from the lists' index alone: no memory is read.
	for _, bad := range []string{"Bitmap", "Seq Scan on memor", " on memories "} {
		if strings.Contains(plan, bad) {
			t.Errorf("plan has a %s:\n%s", bad, plan)
		}
	}
	// The lists come in order: the merge's sort key is the only one on
	// them (a sort of a list would be a second).
	if n := strings.Count(plan, "Sort Key: t.created_at DESC"); n != 1 {
		t.Errorf("plan sorts the lists %d times, want the merge alone:\n%s", n, plan)
	}
	if _, err := s.SearchMemories(ctx, q); err != nil {
		t.Fatal(err)
	}
	for name, want := range defaults {
		if got, err := s.Setting(ctx, name); err != nil || got != want {
			t.Errorf("after a search %s = %q (%v), want %q", name, got, err, want)
		}
	}
}

// TestTermListsServeOnlyOrSearches checks which searches read the term
// lists: OR-ed words without tags; not token groups (MinMatch), tag
// filters or too many lists.
func TestTermListsServeOnlyOrSearches(t *testing.T) {
	u1 := []store.Scope{{Layer: store.LayerUser, ScopeID: "u1"}}
	many := make([]store.Scope, 20)
	for i := range many {
		many[i] = store.Scope{Layer: store.LayerUser, ScopeID: fmt.Sprint("u", i)}
	}
	for _, c := range []struct {
		q    store.SearchQuery
		want bool
	}{
		{store.SearchQuery{Tenant: "t", Terms: []string{"kafka", "brokers"}, Scopes: u1}, true},
		{store.SearchQuery{Tenant: "t", Terms: []string{"kafka", "brokers"}, Scopes: u1, MinMatch: 2}, false},
		{store.SearchQuery{Tenant: "t", Terms: []string{"kafka"}, Scopes: u1, Tags: []string{"ops"}}, false},
		{store.SearchQuery{Tenant: "t", Terms: []string{"kafka", "brokers", "topics", "lag"}, Scopes: many}, false},
		{store.SearchQuery{Tenant: "t", Terms: []string{"kafka", "brokers", "topics"}, Scopes: many}, true},
	} {
		if got := postgres.UsesTermLists(c.q); got != c.want {
			t.Errorf("%+v: term lists %v, want %v", c.q, got, c.want)
		}
	}
}

// checkTermRows checks that memory_terms holds exactly one row for each
// lexeme of each memory's tsv, with the number of its memory's scope, its
// creation time and id.
func checkTermRows(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	const want = `SELECT s.key, l, m.created_at, m.id FROM memories m
		JOIN memory_scopes s ON s.tenant = m.tenant AND s.layer = m.layer AND s.scope_id = m.scope_id,
		unnest(tsvector_to_array(m.tsv)) AS l`
	const have = `SELECT scope, lexeme, created_at, id FROM memory_terms`
	var missing, extra, rows int
	err := pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM (`+want+` EXCEPT ALL `+have+`) AS a),
		(SELECT count(*) FROM (`+have+` EXCEPT ALL `+want+`) AS b),
		(SELECT count(*) FROM memory_terms)`).Scan(&missing, &extra, &rows)
	if err != nil {
		t.Fatal(err)
	}
	if missing != 0 || extra != 0 || rows == 0 {
		t.Fatalf("memory_terms: %d rows, %d missing, %d not of any memory", rows, missing, extra)
	}
	var scopes int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT tenant, layer, scope_id FROM memories
		EXCEPT SELECT tenant, layer, scope_id FROM memory_scopes) AS u`).Scan(&scopes); err != nil {
		t.Fatal(err)
	}
	if scopes != 0 {
		t.Fatalf("%d scopes of memories are not numbered", scopes)
	}
}

// TestTokensMakeOneLexeme checks what the term lists assume of
// PostgreSQL's english configuration: a search token (a run of letters,
// marks and digits, backend.Tokens) makes at most one lexeme, so a token's
// list is that of its lexeme. Tokens of many scripts and kinds of digits,
// and random runs of letters, marks and digits from all of Unicode's
// categories.
func TestTokensMakeOneLexeme(t *testing.T) {
	pool := newPool(t, freshSchema(t))
	terms := []string{"The billing service stores invoices in PostgreSQL; deploys happen every Tuesday",
		"café naïve Straße 項目abc ǅemal ﬁle ａｂｃ x² ٣٤٥ αβ12 абв123 abcабв e1e2 1e5 0x1f 3rd v2 ⅷ ½ ① 12345678901234567890",
		"日本語テキスト ภาษาไทย العربية हिन्दी 한국어 עברית ελληνικά ქართული Ṩỹņţĥëŝįś o\u0308bject",
		"don't e-mail user@example.com https://example.com/a?b=c 3.14 1,000 2026-11-27 v1.2.3 foo_bar"}
	r := rand.New(rand.NewPCG(11, 11))
	alphabet := []rune("aZ9é項ア한ก٣²ⅷ\u0308\u0301\u093fאαж½①ǅﬁＡ١߀𝟘𐐀")
	for range 2000 {
		rs := make([]rune, 1+r.IntN(8))
		for i := range rs {
			rs[i] = alphabet[r.IntN(len(alphabet))]
		}
		terms = append(terms, string(rs))
	}
	tokens := backend.Tokens(terms[:4])
	for _, term := range terms[4:] {
		tokens = append(tokens, backend.Tokens([]string{term})...)
	}
	rows, err := pool.Query(t.Context(), `SELECT tok, tsvector_to_array(to_tsvector('english', tok))
		FROM unnest($1::text[]) AS tok WHERE cardinality(tsvector_to_array(to_tsvector('english', tok))) > 1`, tokens)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var tok string
		var lexemes []string
		if err := rows.Scan(&tok, &lexemes); err != nil {
			t.Fatal(err)
		}
		t.Errorf("token %q makes lexemes %q", tok, lexemes)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tokens) < 1000 {
		t.Fatalf("only %d tokens", len(tokens))
	}
}

// TestConcurrentWritesNumberAScopeOnce adds memories to new scopes from
// several connections at once, round after round, each round's writes to
// a scope no memory had: every write succeeds, each scope gets one number,
// and the term lists hold every memory.
func TestConcurrentWritesNumberAScopeOnce(t *testing.T) {
	cfg := freshSchema(t)
	s, err := postgres.OpenConfig(t.Context(), cfg, store.WithMaxConns(8))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	const writers, rounds = 8, 20
	r := rand.New(rand.NewPCG(12, 12))
	for round := range rounds {
		start := make(chan struct{})
		errs := make(chan error, writers)
		for range writers {
			m := &store.Memory{Tenant: "t1", Layer: store.LayerProject, ScopeID: fmt.Sprint("p", round), Content: termContent(r)}
			go func() {
				<-start
				errs <- s.AddMemory(t.Context(), m)
			}()
		}
		close(start)
		for range writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	pool := newPool(t, cfg)
	checkTermRows(t, pool)
	var scopes int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM memory_scopes`).Scan(&scopes); err != nil {
		t.Fatal(err)
	}
	if scopes != rounds {
		t.Fatalf("%d scopes numbered, want %d", scopes, rounds)
	}
}

// newPool opens a pool on cfg's schema for the test's own queries, closed
// at cleanup.
func newPool(t *testing.T, cfg *pgxpool.Config) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestWindowReadsTextResults: a pool whose statements answer in text (the
// simple protocol) ranks the same as the default one, whose binary window
// rows searchText decodes itself.
func TestWindowReadsTextResults(t *testing.T) {
	cfg := freshSchema(t)
	binary := openConfig(t, cfg.Copy())
	simple := cfg.Copy()
	simple.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	text := openConfig(t, simple)
	r := rand.New(rand.NewPCG(11, 11))
	batch := make([]*store.Memory, 300)
	for i := range batch {
		batch[i] = &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: fmt.Sprint("u", i%2), Content: termContent(r)}
	}
	if err := binary.AddMemories(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	for _, terms := range [][]string{{"w0x", "deploy"}, {"w1x"}, {"w2x", "w3x", "w4x"}} {
		for _, light := range []bool{false, true} {
			q := store.SearchQuery{Tenant: "t1", Terms: terms, Light: light, CandidateLimit: 20,
				Scopes: []store.Scope{{Layer: store.LayerUser, ScopeID: "u0"}, {Layer: store.LayerUser, ScopeID: "u1"}}}
			want, err := binary.SearchMemories(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := text.SearchMemories(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Candidates) == 0 || !reflect.DeepEqual(got, want) {
				t.Errorf("%v (light %v): in text %+v, in binary %+v", terms, light, got, want)
			}
		}
	}
}

// TestSearchLeavesOutWhatChangedAfterTheWindow changes memories of a
// search's window after the window is read and before its best memories
// are (postgres.SearchBetween): a memory moved out of the caller's scopes,
// orphaned, untagged or deleted in between is not a candidate, through the
// term lists and through the GIN index (which a tag filter takes).
func TestSearchLeavesOutWhatChangedAfterTheWindow(t *testing.T) {
	s := openFresh(t).(*postgres.Store)
	ctx := t.Context()
	home := store.Scope{Layer: store.LayerUser, ScopeID: "u1"}
	for _, tc := range []struct {
		name       string
		tags       []string
		gin, light bool
	}{
		{name: "term lists"},
		{name: "term lists light", light: true},
		{name: "GIN index", gin: true},
		{name: "tag filter", tags: []string{"keep"}, gin: true},
		{name: "tag filter light", tags: []string{"keep"}, gin: true, light: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := "between-" + strings.ReplaceAll(tc.name, " ", "-")
			pointer := func(kid string, sc store.Scope, tags []string) *store.Memory {
				return &store.Memory{Tenant: tenant, Layer: sc.Layer, ScopeID: sc.ScopeID, Content: "alpha beta " + kid,
					Tags: tags, KnowledgeItemID: kid, SourceType: store.SourceKnowledgeSync}
			}
			byKid := map[string]string{}
			for _, kid := range []string{"moved", "orphaned", "untagged", "deleted", "kept"} {
				m := pointer(kid, home, []string{"keep"})
				if _, err := s.UpsertPointer(ctx, m); err != nil {
					t.Fatal(err)
				}
				byKid[kid] = m.ID
			}
			q := store.SearchQuery{Tenant: tenant, Terms: []string{"alpha"}, Scopes: []store.Scope{home}, Tags: tc.tags, Light: tc.light}
			if got := postgres.UsesTermLists(q); got != (len(tc.tags) == 0) {
				t.Fatalf("UsesTermLists = %v with tags %q", got, tc.tags)
			}
			res, err := s.SearchBetween(ctx, q, tc.gin, func() {
				if _, err := s.UpsertPointer(ctx, pointer("moved", store.Scope{Layer: store.LayerProject, ScopeID: "p9"}, []string{"keep"})); err != nil {
					t.Error(err)
				}
				if _, err := s.MarkOrphaned(ctx, tenant, []string{"orphaned"}); err != nil {
					t.Error(err)
				}
				if _, err := s.UpsertPointer(ctx, pointer("untagged", home, nil)); err != nil {
					t.Error(err)
				}
				if err := s.DeleteMemory(ctx, tenant, byKid["deleted"]); err != nil {
					t.Error(err)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Matched != 5 {
				t.Errorf("matched %d, want the window's 5", res.Matched)
			}
			var got []string
			for _, c := range res.Candidates {
				got = append(got, strings.TrimPrefix(c.Memory.Content, "alpha beta "))
				if c.Memory.Layer != home.Layer || c.Memory.ScopeID != home.ScopeID {
					t.Errorf("candidate %s is in %s/%s, outside the caller's scope", c.Memory.ID, c.Memory.Layer, c.Memory.ScopeID)
				}
			}
			want := []string{"kept", "untagged"}
			if len(tc.tags) > 0 {
				want = []string{"kept"}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("candidates %q, want %q", got, want)
			}
		})
	}
}
