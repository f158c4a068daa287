package kb

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// DefaultQueryLimit is the number of matches Query returns when Query.Limit
// is not positive.
const DefaultQueryLimit = 10

// Field weights for text relevance: a query term found in the title says
// more about an item than one found somewhere in its body.
const (
	weightTitle   = 1.0
	weightID      = 0.8
	weightTags    = 0.8
	weightSummary = 0.7
	weightContent = 0.4
)

// Query selects and ranks items. Every filter that is set must hold.
type Query struct {
	// Text is a natural-language query. Empty (or only stop words) selects
	// every item that passes the filters.
	Text  string
	Type  string // exact item type, "" for any
	Layer string // exact layer, "" for any
	// Tags keeps items carrying every one of these tags (case-insensitive).
	Tags []string
	// Statuses keeps items with one of these statuses; empty means
	// ["accepted"], so drafts and superseded decisions stay out of answers
	// unless asked for.
	Statuses []string
	// Limit caps the matches returned; zero or negative means
	// DefaultQueryLimit.
	Limit int
	// Viewer, when set, keeps only the items it sees (Viewer.Sees).
	Viewer *Viewer
}

// Match is one item selected by Query with its relevance.
type Match struct {
	Item *Item
	// Score is in [0, 1]: the weighted share of query terms the item
	// contains, or 1 when the query has no text.
	Score float64
}

// itemTerms maps each stemmed term of an item to the weight of the most
// important field it appears in.
type itemTerms map[string]float64

func indexItem(it *Item) itemTerms {
	t := itemTerms{}
	add := func(text string, w float64) {
		for _, term := range tokenize(text) {
			if w > t[term] {
				t[term] = w
			}
		}
	}
	add(it.Title, weightTitle)
	add(it.ID, weightID)
	add(strings.Join(it.Tags, " "), weightTags)
	add(it.Summary, weightSummary)
	add(it.Content, weightContent)
	return t
}

// tokenize lower-cases text, splits it into words, drops English stop words
// and one-letter words, and stems the rest with the Snowball English stemmer.
func tokenize(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := words[:0]
	for _, w := range words {
		if r, size := utf8.DecodeRuneInString(w); size == len(w) && !unicode.IsDigit(r) {
			continue
		}
		if english.IsStopWord(w) {
			continue
		}
		out = append(out, english.Stem(w, false))
	}
	return out
}

// Admits reports whether it passes q's filters (viewer, type, layer,
// status, tags), its text aside.
func (q Query) Admits(it *Item) bool {
	statuses := q.Statuses
	if len(statuses) == 0 {
		statuses = []string{StatusAccepted}
	}
	return q.Viewer.Sees(it) &&
		(q.Type == "" || it.Type == q.Type) &&
		(q.Layer == "" || it.Layer == q.Layer) &&
		slices.Contains(statuses, it.Status) &&
		hasAllTags(it, q.Tags)
}

// Query returns the items matching q, best first, and how many matched
// before Limit was applied. With text, items are ranked by Score, then by
// layer precedence (company, org, team, project), then by id; items sharing
// no term with the text are left out. Without text, every item passing the
// filters matches with Score 1, in layer precedence then id order.
func (s *Set) Query(q Query) (matches []Match, total int) {
	statuses := q.Statuses
	if len(statuses) == 0 {
		statuses = []string{StatusAccepted}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultQueryLimit
	}
	terms := slices.Compact(slices.Sorted(slices.Values(tokenize(q.Text))))
	q.Statuses = statuses
	for _, it := range s.items {
		if !q.Admits(it) {
			continue
		}
		score := 1.0
		if len(terms) > 0 {
			score = s.score(it, terms)
			if score == 0 {
				continue
			}
		}
		matches = append(matches, Match{Item: it, Score: score})
	}
	slices.SortFunc(matches, func(a, b Match) int {
		return cmp.Or(
			cmp.Compare(b.Score, a.Score),
			cmp.Compare(layerRank(a.Item.Layer), layerRank(b.Item.Layer)),
			cmp.Compare(a.Item.ID, b.Item.ID),
		)
	})
	total = len(matches)
	if len(matches) > limit {
		matches = matches[:limit]
	}
	return matches, total
}

func (s *Set) score(it *Item, terms []string) float64 {
	idx := s.terms[it]
	var sum float64
	for _, term := range terms {
		sum += idx[term]
	}
	return sum / float64(len(terms))
}

func hasAllTags(it *Item, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(it.Tags, func(t string) bool { return strings.EqualFold(t, w) }) {
			return false
		}
	}
	return true
}
