package memory

import (
	"math"
	"slices"

	"github.com/toolsvc/toolsvc/internal/base/words"
	"github.com/toolsvc/toolsvc/internal/store"
)

// Weights of the lexical score; see Score.
const (
	coverageWeight  = 0.75
	relevanceWeight = 0.25
	// duplicateJaccard is the token-set similarity at which two memories
	// count as near-duplicates.
	duplicateJaccard = store.NearDuplicateJaccard
)

// query is an analysed search query.
type query struct {
	// words are the distinct content words, sent to the store as OR terms
	// (its engine stems them itself).
	words []string
	// stems are the distinct stems of words, in first-seen order; coverage
	// is measured against them.
	stems []words.Term
}

func parseQuery(text string) query {
	var q query
	seenWord, seenStem := map[string]bool{}, map[string]bool{}
	for _, w := range words.Content(text) {
		if !seenWord[w] {
			seenWord[w] = true
			q.words = append(q.words, w)
		}
		if t, _ := words.ContentTerm(w); !seenStem[t.Stem] {
			seenStem[t.Stem] = true
			q.stems = append(q.stems, t)
		}
	}
	return q
}

// stemSet returns the distinct stems of text's content words, sorted
// (words.Terms): a set that coverage searches and that two sets'
// similarity merges (jaccard, nearDuplicate), with no map to build or
// intern.
func stemSet(text string) []words.Term { return words.Terms(text) }

// coverage is the share of the query's stems present in doc (a stemSet),
// in 0..1.
func coverage(stems []words.Term, doc []words.Term) float64 {
	if len(stems) == 0 {
		return 0
	}
	n := 0
	for _, s := range stems {
		if _, ok := slices.BinarySearchFunc(doc, s, words.Term.Compare); ok {
			n++
		}
	}
	return float64(n) / float64(len(stems))
}

// Score is the relevance of one candidate memory, in 0..1:
//
//	lexical = 0.75 × coverage + 0.25 × relevance / maxRelevance
//	score   = lexical                                        (no embedder)
//	score   = 1 − (1 − max(0, cosine)) × (1 − lexical)       (with an embedder)
//
// coverage is the share of the query's distinct stemmed content words that
// the memory contains; relevance is the backend's full-text relevance
// (BM25 on the window of matches, on both stores), normalised by the best
// relevance among the candidates of the same search, so that scores of both
// backends share one scale; cosine is the cosine similarity of the query's
// and the memory's embeddings, rescaled above the model's similarity floor
// when the embedder knows it (Calibrated: 0 for the similarity unrelated
// texts reach, 1 for identical vectors). Coverage dominates so that the default
// threshold of 0.7 keeps memories that contain every query word, or most of
// them with strong full-text relevance. The hybrid score is a fuzzy "or"
// of the two signals: either alone can carry a memory (so one that shares
// no word with the query scores its similarity, and can reach the
// threshold on meaning alone), both together score higher than either,
// and it stays in 0..1. maxRelevance <= 0 counts the relevance term as 0;
// cosine is ignored when hybrid is false. With an embedder that declares
// its similarity floor, search scores with ScoreCalibrated instead.
func Score(coverage, relevance, maxRelevance, cosine float64, hybrid bool) float64 {
	rel := 0.0
	if maxRelevance > 0 {
		rel = clamp01(relevance / maxRelevance)
	}
	lexical := coverageWeight*clamp01(coverage) + relevanceWeight*rel
	if !hybrid {
		return round4(lexical)
	}
	return round4(1 - (1-clamp01(cosine))*(1-lexical))
}

// minWordsCoverage is the coverage a memory's words must exceed to count
// in ScoreCalibrated: more than half of the query's content words.
const minWordsCoverage = 0.5

// ScoreCalibrated is the hybrid score with an embedder that declares its
// similarity floor (Calibrated), similarity being the cosine rescaled
// above it (0 for what unrelated texts reach):
//
//	score = 1 − (1 − similarity) × (1 − lexical)   coverage > 1/2
//	score = similarity                             coverage <= 1/2
//
// with lexical as in Score. A memory containing at most half of the
// query's content words is ranked by meaning alone: with a static model
// the similarity of a paraphrase is weak (its memory's rescaled similarity
// is a median 0.3 on the natural set, docs/BENCHMARKS.md), and the fuzzy
// "or" of Score let one shared topic word ("app" of "who runs the phone
// app group?") lift a near miss above the paraphrase, and above the
// default threshold for questions no memory answers: hybrid recall@5 fell
// to 0.082 where the similarity alone gives 0.167, and 0.667 of the
// unanswerable questions returned something. With the rule, hybrid ranks
// those questions as the similarity alone does and 0.917 of the
// unanswerable ones return nothing, while a memory that contains most of
// the query's words keeps the lift of its words. Embedders without a floor
// keep Score, unchanged.
func ScoreCalibrated(coverage, relevance, maxRelevance, similarity float64) float64 {
	if clamp01(coverage) <= minWordsCoverage {
		return round4(clamp01(similarity))
	}
	return Score(coverage, relevance, maxRelevance, similarity, true)
}

// jaccard is |a ∩ b| / |a ∪ b| of two stem sets (stemSet: sorted,
// distinct); 1 for two empty sets.
func jaccard(a, b []words.Term) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch c := a[i].Compare(b[j]); {
		case c == 0:
			inter++
			i++
			j++
		case c < 0:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// nearDuplicate reports jaccard(a, b) >= duplicateJaccard of two stem
// sets, with the same arithmetic, giving up early: the ratio of the set
// sizes bounds the similarity from above (|a ∩ b| <= the smaller,
// |a ∪ b| >= the larger), which settles most pairs at once, and the
// similarity grows with the intersection, so the merge stops as soon as
// even the largest intersection still possible falls short.
func nearDuplicate(a, b []words.Term) bool {
	small, large := min(len(a), len(b)), max(len(a), len(b))
	if large > 0 && float64(small)/float64(large) < duplicateJaccard {
		return false
	}
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	reaches := func(inter int) bool { return float64(inter)/float64(len(a)+len(b)-inter) >= duplicateJaccard }
	inter, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch c := a[i].Compare(b[j]); {
		case c == 0:
			inter++
			i++
			j++
			continue
		case c < 0:
			i++
		default:
			j++
		}
		if !reaches(inter + min(len(a)-i, len(b)-j)) {
			return false
		}
	}
	return reaches(inter)
}

// cosine is the cosine similarity of a and b, 0 when they differ in length
// or either is zero.
func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

func clamp01(v float64) float64 {
	switch {
	case math.IsNaN(v) || v < 0:
		return 0
	case v > 1:
		return 1
	}
	return v
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
