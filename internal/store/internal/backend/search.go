package backend

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolsvc/toolsvc/internal/base/words"
	"github.com/toolsvc/toolsvc/internal/store"
)

// Search bounds shared by the backends.
const (
	// maxTokens bounds the OR-ed tokens of one query: beyond a few dozen
	// words a query stops being selective and only costs time.
	maxTokens = 32
	// maxTokenLen drops tokens no natural-language word reaches; PostgreSQL
	// does not index words over 2047 bytes anyway.
	maxTokenLen = 128
	// maxGroupTerms bounds the token occurrences of an exact MinMatch
	// expansion (groups × tokens per group): engines look each occurrence
	// up separately (FTS5 opens an iterator per occurrence over every index
	// segment), so beyond it a cheaper necessary condition is used.
	maxGroupTerms = 8
)

// Search is a validated, normalized SearchQuery.
type Search struct {
	Tenant string
	// Text reports whether a text filter applies (the query had Terms).
	Text bool
	// Tokens are the search tokens: lower-case runs of letters, marks and
	// digits, stop words removed, de-duplicated. They contain no
	// punctuation, so no token can carry query syntax.
	Tokens []string
	// Groups, when set, replaces "any token": with EachGroup false a row
	// must contain all tokens of at least one group, with EachGroup true
	// at least one token of every group (see TokenGroups). Nil means any
	// token matches.
	Groups    [][]string
	EachGroup bool
	// Scopes are the de-duplicated scope pairs.
	Scopes []store.Scope
	// Tags must all be present.
	Tags            []string
	Limit           int
	IncludeOrphaned bool
	// Light is SearchQuery.Light.
	Light bool
}

// MatchesNothing reports a query that cannot match any row: no scopes, or
// terms that all dropped out. Backends answer it without a query.
func (s Search) MatchesNothing() bool {
	return len(s.Scopes) == 0 || (s.Text && len(s.Tokens) == 0)
}

// PrepareSearch validates q and normalizes it into a Search.
func PrepareSearch(q store.SearchQuery) (Search, error) {
	if err := RequireTenant(q.Tenant); err != nil {
		return Search{}, err
	}
	if len(q.Scopes) > maxScopes {
		return Search{}, invalid("Scopes", "too many scopes")
	}
	s := Search{
		Tenant:          q.Tenant,
		Text:            len(q.Terms) > 0,
		Tokens:          Tokens(q.Terms),
		IncludeOrphaned: q.IncludeOrphaned,
		Limit:           q.CandidateLimit,
		Light:           q.Light,
	}
	for _, sc := range q.Scopes {
		if !sc.Layer.Valid() {
			return Search{}, invalid("Scopes.Layer", "unknown layer "+quote(string(sc.Layer)))
		}
		if err := requireText("Scopes.ScopeID", sc.ScopeID, maxIDLen); err != nil {
			return Search{}, err
		}
		if !slices.Contains(s.Scopes, sc) {
			s.Scopes = append(s.Scopes, sc)
		}
	}
	tags, err := dedupeTags("Tags", q.Tags)
	if err != nil {
		return Search{}, err
	}
	s.Tags = tags
	s.Groups, s.EachGroup = TokenGroups(s.Tokens, q.MinMatch-unindexedTerms(q.Terms))
	switch {
	case s.Limit <= 0:
		s.Limit = store.DefaultCandidateLimit
	case s.Limit > store.MaxCandidateLimit:
		s.Limit = store.MaxCandidateLimit
	}
	return s, nil
}

// Tokens splits terms into the search tokens described on Search.Tokens.
// Splitting on anything that is not a letter, mark or digit mirrors both
// engines' tokenizers (SQLite unicode61, PostgreSQL's default parser) and
// removes every operator character (quotes, *, :, &, |, !, parentheses,
// backslashes) before a term reaches an engine. Operator words such as OR,
// AND, NOT or NEAR survive as tokens but are always quoted by the backends,
// where they are plain words.
func Tokens(terms []string) []string {
	var out []string
	for _, term := range terms {
		if !utf8.ValidString(term) {
			term = strings.ToValidUTF8(term, " ")
		}
		for _, tok := range words.Split(term) {
			if !Searchable(tok) || slices.Contains(out, tok) {
				continue
			}
			out = append(out, tok)
			if len(out) == maxTokens {
				return out
			}
		}
	}
	return out
}

// Searchable reports whether a word of words.All can be a search token:
// not a stop word, and not longer than any natural-language word. An
// index need only hold the words that are.
func Searchable(w string) bool {
	return len(w) <= maxTokenLen && !words.IsStop(w)
}

// unindexedTerms counts the distinct terms that yield no token (stop
// words, over-long runs): MinMatch counts them as present.
func unindexedTerms(terms []string) int {
	n := 0
	for i, t := range terms {
		if len(Tokens([]string{t})) == 0 && !slices.Contains(terms[:i], t) {
			n++
		}
	}
	return n
}

// TokenGroups expresses "at least k of tokens" for an engine that knows
// only AND and OR. When the exact form is small (at most maxGroupTerms
// token occurrences), it returns every k-combination with each false: a
// row must contain all of one group. Otherwise it returns the necessary
// condition each true: tokens cut into blocks of n-k+1 (a row missing at
// most n-k tokens has one of every such block; a shorter remainder is
// dropped), a row must contain one token of every block — a superset of
// the exact answer that still prunes most rows. k <= 1 (or one token)
// gives nil, any token; k beyond the tokens means all of them.
func TokenGroups(tokens []string, k int) (groups [][]string, each bool) {
	n := len(tokens)
	k = min(k, n)
	if k <= 1 {
		return nil, false
	}
	if c := binomial(n, k); c*k <= maxGroupTerms {
		return combinations(tokens, k), false
	}
	size := n - k + 1
	for i := 0; i+size <= n; i += size {
		groups = append(groups, tokens[i:i+size])
	}
	return groups, true
}

// combinations returns every k-combination of tokens in lexicographic
// order of positions.
func combinations(tokens []string, k int) [][]string {
	n := len(tokens)
	var out [][]string
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		g := make([]string, k)
		for i, j := range idx {
			g[i] = tokens[j]
		}
		out = append(out, g)
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return out
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

// binomial is n choose k, saturating well above maxGroupTerms.
func binomial(n, k int) int {
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > 1<<20 {
			return r
		}
	}
	return r
}

// Render writes the token condition of s in an engine's syntax: term
// renders one token, and and or are the engine's operators. Without
// Groups the tokens are OR-ed; with them each group's tokens are AND-ed
// and the groups OR-ed (the other way round with EachGroup).
func (s Search) Render(term func(token string) string, and, or string) string {
	join := func(tokens []string, op string) string {
		parts := make([]string, len(tokens))
		for i, t := range tokens {
			parts[i] = term(t)
		}
		return strings.Join(parts, op)
	}
	if s.Groups == nil {
		return join(s.Tokens, or)
	}
	inner, outer := and, or
	if s.EachGroup {
		inner, outer = or, and
	}
	groups := make([]string, len(s.Groups))
	for i, g := range s.Groups {
		groups[i] = "(" + join(g, inner) + ")"
	}
	return strings.Join(groups, outer)
}
