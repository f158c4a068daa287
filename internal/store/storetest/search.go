package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

var (
	scopeU1 = store.Scope{Layer: store.LayerUser, ScopeID: "u1"}
	scopeU2 = store.Scope{Layer: store.LayerUser, ScopeID: "u2"}
	scopeP1 = store.Scope{Layer: store.LayerProject, ScopeID: "p1"}
	scopeS1 = store.Scope{Layer: store.LayerSession, ScopeID: "s1"}
)

func testSearchScopes(t *testing.T, s store.Store) {
	u1 := newMemory("t1", store.LayerUser, "u1", "database choice for user one")
	u2 := newMemory("t1", store.LayerUser, "u2", "database choice for user two")
	p1 := newMemory("t1", store.LayerProject, "p1", "database choice for the project")
	s1 := newMemory("t1", store.LayerSession, "s1", "database choice in this session")
	// Same scope id, different layer: must not leak into a user-layer scope.
	pu1 := newMemory("t1", store.LayerProject, "u1", "database choice of a project named u1")
	mustAdd(t, s, u1, u2, p1, s1, pu1)

	tests := []struct {
		name   string
		terms  []string
		scopes []store.Scope
		want   []*store.Memory
	}{
		{name: "no scopes match nothing", terms: []string{"database"}},
		{name: "no scopes without terms", scopes: nil},
		{name: "one scope", terms: []string{"database"}, scopes: []store.Scope{scopeU1}, want: []*store.Memory{u1}},
		{name: "two scopes", terms: []string{"database"}, scopes: []store.Scope{scopeU1, scopeP1}, want: []*store.Memory{u1, p1}},
		{name: "duplicate scopes", terms: []string{"database"}, scopes: []store.Scope{scopeU2, scopeU2}, want: []*store.Memory{u2}},
		{name: "without terms", scopes: []store.Scope{scopeS1, scopeU2}, want: []*store.Memory{s1, u2}},
		{name: "unknown scope id", terms: []string{"database"}, scopes: []store.Scope{{Layer: store.LayerTeam, ScopeID: "nobody"}}},
		{name: "all five", terms: []string{"database"}, want: []*store.Memory{u1, u2, p1, s1, pu1}, scopes: []store.Scope{
			scopeU1, scopeU2, scopeP1, scopeS1, {Layer: store.LayerProject, ScopeID: "u1"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := mustSearch(t, s, store.SearchQuery{Tenant: "t1", Terms: tc.terms, Scopes: tc.scopes})
			wantSameSet(t, res, tc.want)
		})
	}
}

// wantSameSet checks that res holds exactly want, in any order, and that
// Matched agrees.
func wantSameSet(tb testing.TB, res store.SearchResult, want []*store.Memory) {
	tb.Helper()
	got := ids(res)
	var wantIDs []string
	for _, m := range want {
		wantIDs = append(wantIDs, m.ID)
	}
	slices.Sort(got)
	slices.Sort(wantIDs)
	if !slices.Equal(got, wantIDs) {
		tb.Errorf("got IDs %v, want %v", got, wantIDs)
	}
	if res.Matched != len(want) || res.Capped {
		tb.Errorf("Matched = %d (capped %v), want %d", res.Matched, res.Capped, len(want))
	}
}

func testSearchTags(t *testing.T, s store.Store) {
	ab := newMemory("t1", store.LayerUser, "u1", "cluster sizing with tags a and b", "a", "b")
	a := newMemory("t1", store.LayerUser, "u1", "cluster sizing with tag a", "a")
	bc := newMemory("t1", store.LayerUser, "u1", "cluster sizing with tags b and c", "b", "c")
	none := newMemory("t1", store.LayerUser, "u1", "cluster sizing without tags")
	mustAdd(t, s, ab, a, bc, none)

	tests := []struct {
		name  string
		terms []string
		tags  []string
		want  []*store.Memory
	}{
		{name: "no tag filter", terms: []string{"cluster"}, want: []*store.Memory{ab, a, bc, none}},
		{name: "one tag", terms: []string{"cluster"}, tags: []string{"a"}, want: []*store.Memory{ab, a}},
		{name: "all of two tags", terms: []string{"cluster"}, tags: []string{"a", "b"}, want: []*store.Memory{ab}},
		{name: "repeated tag", terms: []string{"cluster"}, tags: []string{"c", "c"}, want: []*store.Memory{bc}},
		{name: "unknown tag", terms: []string{"cluster"}, tags: []string{"z"}},
		{name: "tag is not text", terms: []string{"cluster"}, tags: []string{"tags"}},
		{name: "without terms", tags: []string{"b"}, want: []*store.Memory{ab, bc}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := mustSearch(t, s, store.SearchQuery{Tenant: "t1", Terms: tc.terms, Tags: tc.tags, Scopes: []store.Scope{scopeU1}})
			wantSameSet(t, res, tc.want)
		})
	}
}

func testSearchRelevance(t *testing.T, s store.Store) {
	strong := newMemory("t1", store.LayerUser, "u1", "postgres replication: postgres streaming replication keeps postgres replicas current")
	weak := newMemory("t1", store.LayerUser, "u1", "a tuning guide that mentions postgres once among many other unrelated words about tuning")
	redis := newMemory("t1", store.LayerUser, "u1", "redis is the cache")
	runs := newMemory("t1", store.LayerUser, "u1", "the nightly job runs backups")
	// The same one occurrence in fewer words ranks first, though older:
	// BM25 normalises by length (a tie would put the newer first).
	short := newMemory("t1", store.LayerUser, "u1", "grafana dashboards")
	long := newMemory("t1", store.LayerUser, "u1", "grafana appears once in this much longer note about several monitoring tools and their many settings")
	mustAdd(t, s, strong, weak, redis, runs, short, long)
	scopes := []store.Scope{scopeU1}

	tests := []struct {
		name    string
		terms   []string
		limit   int
		want    []*store.Memory // exact order
		matched int
	}{
		{name: "more occurrences rank first", terms: []string{"postgres"}, want: []*store.Memory{strong, weak}, matched: 2},
		{name: "terms are OR-ed", terms: []string{"replication", "redis"}, matched: 2},
		{name: "limit keeps the best", terms: []string{"postgres"}, limit: 1, want: []*store.Memory{strong}, matched: 2},
		{name: "stemming", terms: []string{"running"}, want: []*store.Memory{runs}, matched: 1},
		{name: "shorter memories rank first", terms: []string{"grafana"}, want: []*store.Memory{short, long}, matched: 2},
		{name: "stop words alone match nothing", terms: []string{"the", "is"}, matched: 0},
		{name: "no match", terms: []string{"kubernetes"}, matched: 0},
		{name: "case and punctuation", terms: []string{"Redis!"}, want: []*store.Memory{redis}, matched: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := mustSearch(t, s, store.SearchQuery{Tenant: "t1", Terms: tc.terms, Scopes: scopes, CandidateLimit: tc.limit})
			if res.Matched != tc.matched {
				t.Errorf("Matched = %d, want %d", res.Matched, tc.matched)
			}
			if tc.want != nil {
				var want []string
				for _, m := range tc.want {
					want = append(want, m.ID)
				}
				if got := ids(res); !slices.Equal(got, want) {
					t.Errorf("order = %v, want %v", got, want)
				}
			}
			if tc.want == nil && len(res.Candidates) != tc.matched {
				t.Errorf("%d candidates, want %d", len(res.Candidates), tc.matched)
			}
			for i, c := range res.Candidates {
				if c.Relevance <= 0 {
					t.Errorf("candidate %d relevance %v, want > 0 for a text match", i, c.Relevance)
				}
				if i > 0 && c.Relevance > res.Candidates[i-1].Relevance {
					t.Errorf("relevance rises at %d: %v after %v", i, c.Relevance, res.Candidates[i-1].Relevance)
				}
			}
		})
	}
}

func testSearchNoTerms(t *testing.T, s store.Store) {
	var added []*store.Memory
	for i := range 5 {
		m := newMemory("t1", store.LayerProject, "p1", fmt.Sprintf("note number %d", i))
		mustAdd(t, s, m)
		added = append(added, m)
		time.Sleep(time.Millisecond) // distinct CreatedAt, although ID order breaks ties too
	}
	res := mustSearch(t, s, store.SearchQuery{Tenant: "t1", Scopes: []store.Scope{scopeP1}, CandidateLimit: 3})
	want := []string{added[4].ID, added[3].ID, added[2].ID}
	if got := ids(res); !slices.Equal(got, want) {
		t.Errorf("order = %v, want newest first %v", got, want)
	}
	if res.Matched != 5 || res.Capped {
		t.Errorf("Matched = %d (capped %v), want 5", res.Matched, res.Capped)
	}
	for i, c := range res.Candidates {
		if c.Relevance != 0 {
			t.Errorf("candidate %d relevance %v, want 0 without terms", i, c.Relevance)
		}
	}
	if got := res.Candidates[0].Memory; !reflect.DeepEqual(got, *added[4]) {
		t.Errorf("candidate memory =\n%+v\nwant\n%+v", got, *added[4])
	}
}

// testSearchLight checks that a Light search returns the candidates of
// the full one, in the same order with the same relevance, and in each
// at least the fields ranking reads.
func testSearchLight(t *testing.T, s store.Store) {
	for i := range 6 {
		m := newMemory("t1", store.LayerUser, "u1", fmt.Sprintf("light search note %d about caching", i))
		m.Tags = []string{"light"}
		mustAdd(t, s, m, newMemory("t1", store.LayerProject, "p1", fmt.Sprintf("project caching note %d", i)))
	}
	q := store.SearchQuery{Tenant: "t1", Terms: []string{"caching", "note"}, Scopes: []store.Scope{scopeU1, scopeP1}, CandidateLimit: 8}
	full := mustSearch(t, s, q)
	q.Light = true
	light := mustSearch(t, s, q)
	if full.Light || len(light.Candidates) != len(full.Candidates) || light.Matched != full.Matched || light.Capped != full.Capped {
		t.Fatalf("light: %d candidates of %d (capped %v, light %v); full: %d of %d (light %v)", len(light.Candidates), light.Matched,
			light.Capped, light.Light, len(full.Candidates), full.Matched, full.Light)
	}
	for i, c := range light.Candidates {
		f := full.Candidates[i]
		got := store.Memory{Tenant: c.Memory.Tenant, ID: c.Memory.ID, Layer: c.Memory.Layer, ScopeID: c.Memory.ScopeID,
			Content: c.Memory.Content, CreatedAt: c.Memory.CreatedAt}
		want := store.Memory{Tenant: f.Memory.Tenant, ID: f.Memory.ID, Layer: f.Memory.Layer, ScopeID: f.Memory.ScopeID,
			Content: f.Memory.Content, CreatedAt: f.Memory.CreatedAt}
		if !reflect.DeepEqual(got, want) || c.Relevance != f.Relevance {
			t.Errorf("candidate %d: light %+v (%v), full %+v (%v)", i, got, c.Relevance, want, f.Relevance)
		}
		if !light.Light && !reflect.DeepEqual(c.Memory, f.Memory) {
			t.Errorf("candidate %d: not reported light, yet %+v differs from %+v", i, c.Memory, f.Memory)
		}
	}
}

// testSearchHostileTerms feeds terms full of FTS and SQL syntax. None may
// fail; each is literal text, so the ones containing a real word still
// find it.
func testSearchHostileTerms(t *testing.T, s store.Store) {
	drop := newMemory("t1", store.LayerUser, "u1", "how to drop table rows safely")
	near := newMemory("t1", store.LayerUser, "u1", "the office near the station")
	cafe := newMemory("t1", store.LayerUser, "u1", "un café naïve à Paris")
	quote := newMemory("t1", store.LayerUser, "u1", `she said "hello" to the column`)
	mustAdd(t, s, drop, near, cafe, quote)

	long := strings.Repeat("a", 10000)
	tests := []struct {
		name  string
		terms []string
		want  []*store.Memory // nil: only "does not fail"
	}{
		{name: "double quote", terms: []string{`"`}},
		{name: "unbalanced quote word", terms: []string{`"hello`}, want: []*store.Memory{quote}},
		{name: "star", terms: []string{"*"}},
		{name: "prefix star", terms: []string{"caf*"}},
		{name: "OR", terms: []string{"OR"}},
		{name: "AND NOT", terms: []string{"AND", "NOT"}},
		{name: "NEAR(", terms: []string{"NEAR("}, want: []*store.Memory{near}},
		{name: "NEAR group", terms: []string{"NEAR(drop table, 2)"}, want: []*store.Memory{drop, near}},
		{name: "SQL injection", terms: []string{"'; DROP TABLE memories; --"}, want: []*store.Memory{drop}},
		{name: "column filter", terms: []string{"content:hello"}, want: []*store.Memory{quote}},
		{name: "tsquery operators", terms: []string{"&", "|", "!", "<->", "(", ")", ":*"}},
		{name: "backslash", terms: []string{`\`, `\\`, `hello\`}, want: []*store.Memory{quote}},
		{name: "caret and braces", terms: []string{"^drop", "{col1 col2}"}, want: []*store.Memory{drop}},
		{name: "unicode with accents", terms: []string{"café"}, want: []*store.Memory{cafe}},
		{name: "unicode scripts", terms: []string{"日本語", "Ελληνικά", "😀"}},
		{name: "invalid UTF-8", terms: []string{"\xff\xfe", "drop\xff"}},
		{name: "NUL byte", terms: []string{"drop\x00table"}, want: []*store.Memory{drop}},
		{name: "10k-char term", terms: []string{long}},
		{name: "10k punctuation", terms: []string{strings.Repeat(`"*():'`, 2000)}},
		{name: "many terms", terms: strings.Fields(strings.Repeat("x y z ", 500))},
		{name: "empty strings", terms: []string{"", " "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.SearchMemories(t.Context(), store.SearchQuery{Tenant: "t1", Terms: tc.terms, Scopes: []store.Scope{scopeU1}})
			if err != nil {
				t.Fatalf("SearchMemories(%.60q): %v", tc.terms, err)
			}
			if tc.want != nil {
				wantSameSet(t, res, tc.want)
			}
		})
	}
	mustCount(t, s, "t1", 4)
}

func testSearchValidation(t *testing.T, s store.Store) {
	tests := []struct {
		name  string
		q     store.SearchQuery
		field string
	}{
		{name: "no tenant", q: store.SearchQuery{Scopes: []store.Scope{scopeU1}}, field: "Tenant"},
		{name: "unknown layer", q: store.SearchQuery{Tenant: "t1", Scopes: []store.Scope{{Layer: "x", ScopeID: "u1"}}}},
		{name: "empty scope id", q: store.SearchQuery{Tenant: "t1", Scopes: []store.Scope{{Layer: store.LayerUser}}}},
		{name: "empty tag", q: store.SearchQuery{Tenant: "t1", Scopes: []store.Scope{scopeU1}, Tags: []string{""}}, field: "Tags"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.SearchMemories(t.Context(), tc.q)
			wantInvalid(t, err, tc.field)
		})
	}
}

// testSearchMatchedCap needs more rows than store.MatchedCap and so a
// store.MemoryBulkAdder to insert them in reasonable time.
func testSearchMatchedCap(t *testing.T, s store.Store) {
	bulk, ok := s.(store.MemoryBulkAdder)
	if !ok {
		t.Skip("backend does not implement store.MemoryBulkAdder")
	}
	ms := make([]*store.Memory, store.MatchedCap+5)
	for i := range ms {
		ms[i] = newMemory("t1", store.LayerUser, "u1", fmt.Sprintf("alpha entry %d", i))
	}
	if err := bulk.AddMemories(t.Context(), ms); err != nil {
		t.Fatalf("AddMemories: %v", err)
	}
	mustCount(t, s, "t1", len(ms))
	for _, terms := range [][]string{{"alpha"}, nil} {
		res := mustSearch(t, s, store.SearchQuery{Tenant: "t1", Terms: terms, Scopes: []store.Scope{scopeU1}, CandidateLimit: 7})
		if res.Matched != store.MatchedCap || !res.Capped || len(res.Candidates) != 7 {
			t.Errorf("terms %v: Matched %d, Capped %v, %d candidates; want %d, true, 7",
				terms, res.Matched, res.Capped, len(res.Candidates), store.MatchedCap)
		}
	}
	res := mustSearch(t, s, store.SearchQuery{Tenant: "t1", Scopes: []store.Scope{scopeU1}, CandidateLimit: 5000})
	if len(res.Candidates) != store.MaxCandidateLimit {
		t.Errorf("CandidateLimit 5000 returned %d, want clamp to %d", len(res.Candidates), store.MaxCandidateLimit)
	}
}

// testSearchMinMatch checks that MinMatch keeps exactly the memories with
// at least that many distinct tokens, all of them when it is larger, and
// that it never applies to a listing without terms.
func testSearchMinMatch(t *testing.T, s store.Store) {
	one := newMemory("t1", store.LayerUser, "u1", "alpha stands alone")
	ab := newMemory("t1", store.LayerUser, "u1", "alpha and beta together")
	ag := newMemory("t1", store.LayerUser, "u1", "gamma rays after alpha decay")
	bgd := newMemory("t1", store.LayerUser, "u1", "beta gamma delta")
	abg := newMemory("t1", store.LayerUser, "u1", "alpha beta gamma in order")
	other := newMemory("t1", store.LayerUser, "u2", "alpha beta gamma elsewhere")
	mustAdd(t, s, one, ab, ag, bgd, abg, other)
	terms := []string{"alpha", "beta", "gamma"}
	tests := []struct {
		min  int
		want []*store.Memory
	}{
		{min: 0, want: []*store.Memory{one, ab, ag, bgd, abg}},
		{min: 1, want: []*store.Memory{one, ab, ag, bgd, abg}},
		{min: 2, want: []*store.Memory{ab, ag, bgd, abg}},
		{min: 3, want: []*store.Memory{abg}},
		{min: 7, want: []*store.Memory{abg}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint("min=", tc.min), func(t *testing.T) {
			res := mustSearch(t, s, store.SearchQuery{Tenant: "t1", Terms: terms, Scopes: []store.Scope{scopeU1}, MinMatch: tc.min})
			wantSameSet(t, res, tc.want)
		})
	}
	// Stop words are not tokens: "the" cannot be required.
	res := mustSearch(t, s, store.SearchQuery{Tenant: "t1", Terms: []string{"the", "alpha", "beta"}, Scopes: []store.Scope{scopeU1}, MinMatch: 3})
	wantSameSet(t, res, []*store.Memory{ab, abg})
	res = mustSearch(t, s, store.SearchQuery{Tenant: "t1", Scopes: []store.Scope{scopeU1}, MinMatch: 3})
	wantSameSet(t, res, []*store.Memory{one, ab, ag, bgd, abg})

	// Too many combinations for the exact form: never a memory with
	// MinMatch words dropped, and the weakest matches still pruned.
	six := []string{"red", "orange", "yellow", "green", "blue", "violet"}
	all := newMemory("t1", store.LayerSession, "s1", strings.Join(six, " "))
	five := newMemory("t1", store.LayerSession, "s1", strings.Join(six[1:], " "))
	lone := newMemory("t1", store.LayerSession, "s1", "red alone")
	mustAdd(t, s, all, five, lone)
	res = mustSearch(t, s, store.SearchQuery{Tenant: "t1", Terms: six, Scopes: []store.Scope{scopeS1}, MinMatch: 5})
	wantSameSet(t, res, []*store.Memory{all, five})
}
