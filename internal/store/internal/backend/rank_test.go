package backend

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/words"
)

func TestBM25(t *testing.T) {
	docs := []string{
		"kafka retention policy for the billing cluster",                                               // both words
		"Kafka, kafka and more KAFKA: retention retention",                                             // more of both
		"the retention of memories in a long essay about nothing in particular at all, really nothing", // one, long
		"unrelated text",
		"",
	}
	s := BM25([]string{"kafka", "retention"}, docs)
	if !(s[1] > s[0] && s[0] > s[2] && s[2] > 0) {
		t.Errorf("scores %v: want more occurrences > both words > one word in a long text > 0", s)
	}
	if s[3] != 0 || s[4] != 0 {
		t.Errorf("scores %v: documents without the words must score 0", s)
	}
	// Stems match: "memories" scores for "memory".
	if s := BM25([]string{"memory"}, []string{"old memories", "nothing"}); s[0] <= 0 || s[1] != 0 {
		t.Errorf("stemmed match scores %v", s)
	}
	// A rarer word weighs more: each document has one of the two words.
	s = BM25([]string{"common", "rare"}, []string{"common", "common", "common", "rare"})
	if s[3] <= s[0] {
		t.Errorf("scores %v: the rare word should outweigh the common one", s)
	}
	if s := BM25([]string{"x"}, nil); len(s) != 0 {
		t.Errorf("no documents gave %v", s)
	}
}

// TestTermFrequenciesAsBefore compares termFrequencies with the
// straightforward code it replaced (each field of IsSeparator, lower-cased,
// stemmed if it shares its first two bytes, or the one byte of a one-byte
// stem, with some stem) on texts with mixed case, non-ASCII words and
// invalid UTF-8.
func TestTermFrequenciesAsBefore(t *testing.T) {
	reference := func(doc string, stems []string) ([]int, int) {
		tf, n := make([]int, len(stems)), 0
		for field := range strings.FieldsFuncSeq(doc, words.IsSeparator) {
			n++
			w := strings.ToLower(field)
			if !slices.ContainsFunc(stems, func(s string) bool {
				k := min(2, len(s))
				return len(w) >= k && w[:k] == s[:k]
			}) {
				continue
			}
			s := words.Stem(w)
			for j, st := range stems {
				if s == st {
					tf[j]++
				}
			}
		}
		return tf, n
	}
	stems := []string{words.Stem("memories"), words.Stem("über"), words.Stem("running"), words.Stem("straße"), "x", words.Stem("dying")}
	for _, doc := range []string{
		"", "Memories, MEMORY and memorial memories.", "ÜBER über-alles Über", "Running runs RUNNER ran",
		"STRASSE Straße straße", "bad\xffmemory\xc3 running\xe2\x82", "naïve café memories\u00a0running",
		"x xylophone X-ray x1", "dying die dies DYING", "m mm me memory",
	} {
		tf := make([]int, len(stems))
		n := termFrequencies(doc, stems, newStarts(stems), tf)
		wantTF, wantN := reference(doc, stems)
		if n != wantN || !slices.Equal(tf, wantTF) {
			t.Errorf("termFrequencies(%q) = %v, %d words; want %v, %d", doc, tf, n, wantTF, wantN)
		}
	}
}

// BenchmarkBM25 ranks a full window (store.MatchedCap+1 documents of 12-24
// words from a Zipf vocabulary, as the service benchmarks' corpus) against
// a query of four words.
func BenchmarkBM25(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.07, 2, 4999)
	// The service benchmarks' words: consonant-vowel syllables.
	word := func(rank uint64) string {
		const cons, vows = "bcdfgklmnprstvz", "aeiou"
		var w []byte
		for n := int(rank) + len(cons)*len(vows); n > 0; n /= len(cons) * len(vows) {
			d := n % (len(cons) * len(vows))
			w = append(w, cons[d/len(vows)], vows[d%len(vows)])
		}
		return string(append(w, 'x'))
	}
	docs := make([]string, 1001)
	for i := range docs {
		ws := make([]string, 12+r.IntN(13))
		for j := range ws {
			ws[j] = word(zipf.Uint64())
		}
		docs[i] = strings.Join(ws, " ")
	}
	tokens := []string{word(40), word(300), word(1200), word(2500)}
	b.ReportAllocs()
	for b.Loop() {
		BM25(tokens, docs)
	}
}
