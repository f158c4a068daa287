package backend

import (
	"math"
	"slices"

	"github.com/toolsvc/toolsvc/internal/base/words"
)

// BM25 parameters (the usual ones, and SQLite FTS5's).
const (
	BM25K1 = 1.2
	BM25B  = 0.75
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
	r := NewRanking(tokens)
	for _, d := range docs {
		r.Add(d)
	}
	return r.Scores()
}

// Ranking is BM25 one document at a time: Add counts a document's words
// (the costly part), Scores weighs them once every document is in. A
// store can count each document as it reads it. A Ranking is not safe for
// concurrent use.
type Ranking struct {
	stems []string
	begin *starts
	// tf holds each document's counts of each stem, row after row.
	tf      []int
	lengths []int
}

// NewRanking returns an empty Ranking for the search tokens.
func NewRanking(tokens []string) *Ranking {
	stems := make([]string, 0, len(tokens))
	for _, t := range tokens {
		if s := words.Stem(t); s != "" && !slices.Contains(stems, s) {
			stems = append(stems, s)
		}
	}
	return &Ranking{stems: stems, begin: newStarts(stems)}
}

// Add counts the next document.
func (r *Ranking) Add(doc string) {
	r.tf = slices.Grow(r.tf, len(r.stems))
	row := r.tf[len(r.tf) : len(r.tf)+len(r.stems)]
	clear(row)
	r.lengths = append(r.lengths, termFrequencies(doc, r.stems, r.begin, row))
	r.tf = r.tf[:len(r.tf)+len(r.stems)]
}

// Scores returns the BM25 score of each document added, in order.
func (r *Ranking) Scores() []float64 { return BM25Counts(r.tf, r.lengths, len(r.stems)) }

// BM25Counts is the Okapi BM25 score of each of len(lengths) documents
// counted elsewhere: lengths[i] is document i's number of words and
// tf[i*terms+j] its count of the search's term j. Document frequencies and
// the average length come from these documents, as with BM25; each
// document's terms are summed in order.
func BM25Counts(tf, lengths []int, terms int) []float64 {
	df := make([]int, terms)
	total := 0
	for i, l := range lengths {
		total += l
		for j, n := range tf[i*terms : (i+1)*terms] {
			if n > 0 {
				df[j]++
			}
		}
	}
	scores := make([]float64, len(lengths))
	if total == 0 {
		return scores
	}
	n := float64(len(lengths))
	avg := float64(total) / n
	for i := range lengths {
		norm := BM25K1 * (1 - BM25B + BM25B*float64(lengths[i])/avg)
		for j, f := range tf[i*terms : (i+1)*terms] {
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[j])+0.5)/(float64(df[j])+0.5))
			scores[i] += idf * float64(f) * (BM25K1 + 1) / (float64(f) + norm)
		}
	}
	return scores
}

// termFrequencies counts, into tf, the words of doc whose stem is each of
// stems, and returns the number of words. Only words with one of the
// beginnings of stems are stemmed (see starts).
func termFrequencies(doc string, stems []string, begin *starts, tf []int) int {
	n := 0
	for w := range words.All(doc) {
		n++
		if !begin.has(w) {
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

// starts is the set of beginnings a word needs for its stem to be one of
// some stems: a stem keeps its word's first two bytes, so a word can only
// stem to a stem of two bytes or more that it shares them with, or to a
// one-byte stem that it begins with. It is a lookup per word instead of a
// comparison per stem; ranking asks it for every word of up to a
// thousand memories.
type starts struct {
	one [256]bool
	two [1 << 16 / 64]uint64 // bit b0<<8|b1
}

func newStarts(stems []string) *starts {
	p := new(starts)
	for _, s := range stems {
		switch {
		case len(s) == 1:
			p.one[s[0]] = true
		case len(s) >= 2:
			k := uint16(s[0])<<8 | uint16(s[1])
			p.two[k>>6] |= 1 << (k & 63)
		}
	}
	return p
}

func (p *starts) has(w string) bool {
	switch {
	case w == "":
		return false
	case p.one[w[0]]:
		return true
	case len(w) < 2:
		return false
	}
	k := uint16(w[0])<<8 | uint16(w[1])
	return p.two[k>>6]&(1<<(k&63)) != 0
}
