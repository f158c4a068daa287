package backend

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

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
)

// Search is a validated, normalized SearchQuery.
type Search struct {
	Tenant string
	// Text reports whether a text filter applies (the query had Terms).
	Text bool
	// Tokens are the OR-ed search tokens: lower-case runs of letters, marks
	// and digits, stop words removed, de-duplicated. They contain no
	// punctuation, so no token can carry query syntax.
	Tokens []string
	// Scopes are the de-duplicated scope pairs.
	Scopes []store.Scope
	// Tags must all be present.
	Tags            []string
	Limit           int
	IncludeOrphaned bool
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
		for _, tok := range strings.FieldsFunc(strings.ToLower(term), isSeparator) {
			if len(tok) > maxTokenLen || stopWords[tok] || slices.Contains(out, tok) {
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

func isSeparator(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
}

// stopWords is PostgreSQL's English stop list. PostgreSQL never indexes
// these words, so SQLite must not search them either for both backends to
// match the same rows.
var stopWords = func() map[string]bool {
	const list = "i me my myself we our ours ourselves you your yours yourself yourselves he him his himself " +
		"she her hers herself it its itself they them their theirs themselves what which who whom this that " +
		"these those am is are was were be been being have has had having do does did doing a an the and but " +
		"if or because as until while of at by for with about against between into through during before " +
		"after above below to from up down in out on off over under again further then once here there when " +
		"where why how all any both each few more most other some such no nor not only own same so than too " +
		"very s t can will just don should now"
	m := map[string]bool{}
	for _, w := range strings.Fields(list) {
		m[w] = true
	}
	return m
}()
