package backend

import (
	"math"
	"slices"
	"strings"

	"github.com/toolsvc/toolsvc/internal/words"
)

// BM25 parameters (the usual ones, and SQLite FTS5's).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// BM25 scores docs against the search tokens with Okapi BM25, taking
// document frequencies and the average length from docs themselves (the
// window of matches a search ranks) instead of from the whole index.
// Engines compute whole-index frequencies by walking every posting of
// every term on every query, a cost that grows with the store; within the
// window the weights stay meaningful and the cost is bounded by it.
// Words match by Snowball stem, so "memories" scores for "memory". Scores
// are >= 0, higher is better.
func BM25(tokens []string, docs []string) []float64 {
	stems := make([]string, 0, len(tokens))
	for _, t := range tokens {
		if s := words.Stem(t); s != "" && !slices.Contains(stems, s) {
			stems = append(stems, s)
		}
	}
	tf := make([][]int, len(docs))
	lengths := make([]int, len(docs))
	df := make([]int, len(stems))
	total := 0
	for i, d := range docs {
		tf[i] = make([]int, len(stems))
		lengths[i] = termFrequencies(d, stems, tf[i])
		total += lengths[i]
		for j, n := range tf[i] {
			if n > 0 {
				df[j]++
			}
		}
	}
	scores := make([]float64, len(docs))
	if total == 0 {
		return scores
	}
	n := float64(len(docs))
	avg := float64(total) / n
	for i := range docs {
		norm := bm25K1 * (1 - bm25B + bm25B*float64(lengths[i])/avg)
		for j, f := range tf[i] {
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[j])+0.5)/(float64(df[j])+0.5))
			scores[i] += idf * float64(f) * (bm25K1 + 1) / (float64(f) + norm)
		}
	}
	return scores
}

// termFrequencies counts, into tf, the words of doc whose stem is each of
// stems, and returns the number of words. Only words sharing their first
// two bytes with some stem are stemmed: a stem keeps its word's start.
func termFrequencies(doc string, stems []string, tf []int) int {
	n := 0
	for field := range strings.FieldsFuncSeq(doc, words.IsSeparator) {
		n++
		w := strings.ToLower(field)
		if !sharesStart(w, stems) {
			continue
		}
		s := words.Stem(w)
		for j, st := range stems {
			if s == st {
				tf[j]++
			}
		}
	}
	return n
}

func sharesStart(w string, stems []string) bool {
	for _, s := range stems {
		n := min(2, len(s))
		if len(w) >= n && w[:n] == s[:n] {
			return true
		}
	}
	return false
}
