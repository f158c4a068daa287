package memory

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/base/words"
	"github.com/toolsvc/toolsvc/internal/store"
)

func TestParseQuery(t *testing.T) {
	tests := []struct {
		name             string
		text             string
		wantWords, stems []string
	}{
		{name: "stop words and stems", text: "What are the user's coding preferences?", wantWords: []string{"user", "coding", "preferences"}, stems: []string{"user", "code", "prefer"}},
		{name: "duplicates collapse", text: "Database databases DATABASE", wantWords: []string{"database", "databases"}, stems: []string{"databas"}},
		{name: "only stop words", text: "what is the", wantWords: nil, stems: nil},
		{name: "one-letter words dropped", text: "a b c go", wantWords: []string{"go"}, stems: []string{"go"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := parseQuery(tc.text)
			if !slices.Equal(q.words, tc.wantWords) || !slices.Equal(stemsOf(q.stems), tc.stems) {
				t.Errorf("parseQuery(%q) = %q / %q, want %q / %q", tc.text, q.words, stemsOf(q.stems), tc.wantWords, tc.stems)
			}
		})
	}
}

func TestScore(t *testing.T) {
	tests := []struct {
		name                  string
		cov, rel, maxRel, cos float64
		hybrid                bool
		want                  float64
	}{
		{name: "all words, best relevance", cov: 1, rel: 4, maxRel: 4, want: 1},
		{name: "all words, weakest relevance", cov: 1, rel: 0, maxRel: 4, want: 0.75},
		{name: "two of three words, best relevance", cov: 2.0 / 3, rel: 4, maxRel: 4, want: 0.75},
		{name: "half the words, half relevance", cov: 0.5, rel: 1, maxRel: 2, want: 0.5},
		{name: "no relevance information", cov: 1, rel: 0, maxRel: 0, want: 0.75},
		{name: "hybrid is a fuzzy or", cov: 0.5, rel: 0, maxRel: 4, cos: 0.5, hybrid: true, want: 0.6875},
		{name: "meaning alone carries a memory", cov: 0, rel: 0, maxRel: 0, cos: 0.8, hybrid: true, want: 0.8},
		{name: "a full lexical match stays 1", cov: 1, rel: 4, maxRel: 4, cos: 0.1, hybrid: true, want: 1},
		{name: "negative cosine counts as zero", cov: 0.5, rel: 0, maxRel: 4, cos: -0.9, hybrid: true, want: 0.375},
		{name: "cosine ignored without hybrid", cov: 0.5, rel: 0, maxRel: 1, cos: 1, want: 0.375},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Score(tc.cov, tc.rel, tc.maxRel, tc.cos, tc.hybrid)
			if math.Abs(got-tc.want) > 1e-4 {
				t.Errorf("Score = %v, want %v", got, tc.want)
			}
			if got < 0 || got > 1 {
				t.Errorf("Score = %v outside 0..1", got)
			}
		})
	}
}

// TestScoreCalibrated pins the hybrid score with a calibrated embedder on
// hand-computed values: at most half of the query's words covered, the
// rescaled similarity alone; more, Score's fuzzy "or".
func TestScoreCalibrated(t *testing.T) {
	tests := []struct {
		name                  string
		cov, rel, maxRel, sim float64
		want                  float64
	}{
		// Score would give 1 − 0.7 × (1 − (0.75×0.25 + 0.25)) = 0.6063.
		{name: "one of four words: similarity alone", cov: 0.25, rel: 4, maxRel: 4, sim: 0.3, want: 0.3},
		// Score would give 1 − 0.5 × (1 − 0.375) = 0.6875.
		{name: "exactly half the words: similarity alone", cov: 0.5, rel: 0, maxRel: 4, sim: 0.5, want: 0.5},
		{name: "a minority match under the floor scores 0", cov: 1.0 / 3, rel: 2, maxRel: 2, sim: 0, want: 0},
		{name: "negative similarity counts as 0", cov: 0.25, rel: 1, maxRel: 1, sim: -0.2, want: 0},
		{name: "rounded to 4 places", cov: 0.2, rel: 1, maxRel: 1, sim: 0.123456, want: 0.1235},
		{name: "no shared word: similarity alone", cov: 0, rel: 0, maxRel: 0, sim: 0.8, want: 0.8},
		// lexical = 0.75 × 2/3 + 0.25 × 1 = 0.75; 1 − 0.8 × 0.25 = 0.8.
		{name: "two of three words: fuzzy or", cov: 2.0 / 3, rel: 4, maxRel: 4, sim: 0.2, want: 0.8},
		// lexical = 0.75 × 0.75 + 0.25 × 0.5 = 0.6875; 1 − 0.6 × 0.3125 = 0.8125.
		{name: "three of four words: fuzzy or", cov: 0.75, rel: 1, maxRel: 2, sim: 0.4, want: 0.8125},
		{name: "every word, nothing by meaning: lexical", cov: 1, rel: 0, maxRel: 4, sim: 0, want: 0.75},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ScoreCalibrated(tc.cov, tc.rel, tc.maxRel, tc.sim); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("ScoreCalibrated(%v, %v, %v, %v) = %v, want %v", tc.cov, tc.rel, tc.maxRel, tc.sim, got, tc.want)
			}
		})
	}
	// The natural set's failure, in small: a near miss sharing one of the
	// question's four words, a little closer in meaning than chance,
	// outranks the paraphrase under Score and not under ScoreCalibrated.
	nearMiss := func(f func(cov, rel, maxRel, sim float64) float64) float64 { return f(0.25, 4, 4, 0.35) }
	paraphrase := func(f func(cov, rel, maxRel, sim float64) float64) float64 { return f(0, 0, 4, 0.45) }
	fuzzy := func(cov, rel, maxRel, sim float64) float64 { return Score(cov, rel, maxRel, sim, true) }
	if n, p := nearMiss(fuzzy), paraphrase(fuzzy); n != 0.6344 || p != 0.45 {
		t.Errorf("Score: near miss %v (want 0.6344), paraphrase %v (want 0.45)", n, p)
	}
	if n, p := nearMiss(ScoreCalibrated), paraphrase(ScoreCalibrated); n != 0.35 || p != 0.45 {
		t.Errorf("ScoreCalibrated: near miss %v (want 0.35), paraphrase %v (want 0.45): the paraphrase must rank first", n, p)
	}
}

func TestJaccardAndCosine(t *testing.T) {
	a, b := stemSet("the user prefers dark mode"), stemSet("User prefers dark mode!")
	if want := []string{"dark", "mode", "prefer", "user"}; !slices.Equal(slices.Sorted(slices.Values(stemsOf(a))), want) ||
		!slices.IsSortedFunc(a, words.Term.Compare) {
		t.Errorf("stemSet = %q, want the distinct stems %q, sorted by Term.Compare", stemsOf(a), want)
	}
	if got := stemSet("Modes mode MODE moding"); !slices.Equal(stemsOf(got), []string{"mode"}) {
		t.Errorf("stemSet of one stem four times = %q", stemsOf(got))
	}
	if j := jaccard(a, b); j != 1 {
		t.Errorf("jaccard of the same words = %v, want 1", j)
	}
	if j := jaccard(a, stemSet("user prefers light themes")); j >= duplicateJaccard {
		t.Errorf("jaccard of different statements = %v, want < %v", j, duplicateJaccard)
	}
	tests := []struct {
		name string
		a, b []float32
		want float64
	}{
		{name: "same direction", a: []float32{1, 2}, b: []float32{2, 4}, want: 1},
		{name: "orthogonal", a: []float32{1, 0}, b: []float32{0, 3}, want: 0},
		{name: "opposite", a: []float32{1, 1}, b: []float32{-1, -1}, want: -1},
		{name: "length mismatch", a: []float32{1}, b: []float32{1, 2}, want: 0},
		{name: "zero vector", a: []float32{0, 0}, b: []float32{1, 2}, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := cosine(tc.a, tc.b); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("cosine = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSentences(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{name: "periods", content: "We use Go. Tests run with -race.", want: []string{"We use Go.", "Tests run with -race."}},
		{name: "decimal points stay", content: "Version 1.2 is pinned! Why? Because.", want: []string{"Version 1.2 is pinned!", "Why?", "Because."}},
		{name: "line breaks and padding", content: "  first line\n\n second line  ", want: []string{"first line", "second line"}},
		{name: "empty", content: "   ", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range sentences(tc.content) {
				got = append(got, tc.content[s.start:s.end])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("sentences(%q) = %q, want %q", tc.content, got, tc.want)
			}
		})
	}
}

func TestGrounded(t *testing.T) {
	content := "Deploys happen on Tuesdays.  Rollbacks need   two approvals."
	tests := []struct {
		name   string
		bullet *memoryv1.SummaryBullet
		want   bool
	}{
		{name: "verbatim", bullet: &memoryv1.SummaryBullet{Claim: "Deploys happen on Tuesdays.", Evidence: "Deploys happen on Tuesdays."}, want: true},
		{name: "normalized claim", bullet: &memoryv1.SummaryBullet{Claim: "Rollbacks need two approvals.", Evidence: "Rollbacks need   two approvals."}, want: true},
		{name: "evidence not in memory", bullet: &memoryv1.SummaryBullet{Claim: "Deploys happen on Fridays.", Evidence: "Deploys happen on Fridays."}, want: false},
		{name: "claim adds a word", bullet: &memoryv1.SummaryBullet{Claim: "Deploys never happen on Tuesdays.", Evidence: "Deploys happen on Tuesdays."}, want: false},
		{name: "empty evidence", bullet: &memoryv1.SummaryBullet{Claim: "x", Evidence: ""}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := grounded(tc.bullet, content); got != tc.want {
				t.Errorf("grounded = %v, want %v", got, tc.want)
			}
		})
	}
}

func FuzzSentences(f *testing.F) {
	for _, s := range []string{"A. B! C?", "x\ny", "1.5 is. ok", "", "。 unicode… done."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		for _, s := range sentences(content) {
			if s.start < 0 || s.end > len(content) || s.start >= s.end {
				t.Fatalf("bad span %+v of %q", s, content)
			}
			text := content[s.start:s.end]
			if strings.Trim(text, " \t\n\r\v\f") != text {
				t.Fatalf("sentence %q is not trimmed", text)
			}
			if utf8.ValidString(content) && !utf8.ValidString(text) {
				t.Fatalf("sentence %q of valid %q is not valid UTF-8", text, content)
			}
			b := &memoryv1.SummaryBullet{Claim: normalizeClaim(text), Evidence: text}
			if !grounded(b, content) {
				t.Fatalf("sentence %q of %q is not grounded", text, content)
			}
		}
	})
}

func TestMinMatch(t *testing.T) {
	tests := []struct {
		text      string
		threshold float64
		hybrid    bool
		want      int
	}{
		// 0.75 × 1/2 + 0.25 = 0.625 < 0.7: both words are needed.
		{text: "kafka retention", threshold: 0.7, want: 2},
		// 0.75 × 2/3 + 0.25 = 0.75 ≥ 0.7: two of three.
		{text: "kafka retention policy", threshold: 0.7, want: 2},
		{text: "kafka retention policy", threshold: 0.8, want: 3},
		{text: "kafka retention policy", threshold: 0, want: 1},
		{text: "kafka", threshold: 0.7, want: 1},
		// Hybrid: similarity can lift a one-word match over 0.7.
		{text: "kafka retention", threshold: 0.7, hybrid: true, want: 1},
		// "connect" and "connection" share a stem: one fewer word required.
		{text: "connect connection", threshold: 0.7, want: 0},
		{text: "connect connection pool", threshold: 0.9, want: 1},
		{text: "the of", threshold: 0.7, want: 0},
	}
	for _, tc := range tests {
		if got := minMatch(parseQuery(tc.text), tc.threshold, tc.hybrid); got != tc.want {
			t.Errorf("minMatch(%q, %v, hybrid %v) = %d, want %d", tc.text, tc.threshold, tc.hybrid, got, tc.want)
		}
	}
}

func TestNearDuplicateAgreesWithJaccard(t *testing.T) {
	texts := []string{
		"alpha beta gamma delta epsilon zeta eta theta iota kappa",
		"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda",
		"alpha beta gamma delta epsilon zeta eta theta iota",
		"alpha beta gamma delta epsilon zeta eta theta iota mu",
		"alpha beta gamma delta epsilon",
		"",
		"omega",
	}
	for _, x := range texts {
		for _, y := range texts {
			a, b := stemSet(x), stemSet(y)
			if got, want := nearDuplicate(a, b), jaccard(a, b) >= duplicateJaccard; got != want {
				t.Errorf("nearDuplicate(%q, %q) = %v, jaccard says %v", x, y, got, want)
			}
		}
	}
}

// TestRemoveNearDuplicatesAgreesWithPairwise checks the signature and
// prefix shortcuts against comparing every pair, on sets around the size
// where a differing set can first be a near-duplicate, with the terms'
// real hashes and with hashes of four values (many terms of one hash).
func TestRemoveNearDuplicatesAgreesWithPairwise(t *testing.T) {
	if minNearSize != 9 {
		t.Fatalf("minNearSize = %d, want 9 for a Jaccard of 0.9", minNearSize)
	}
	realTerms := func(set map[string]struct{}) []words.Term {
		return stemSet(strings.Join(slices.Collect(maps.Keys(set)), " "))
	}
	for name, toSet := range map[string]func(map[string]struct{}) []words.Term{"real hashes": realTerms, "four hashes": sortedSet} {
		r := rand.New(rand.NewPCG(1, 2))
		large := 0
		for round := range 200 {
			var hits []hit
			for i := range 30 {
				n := 5 + r.IntN(20)
				set := map[string]struct{}{}
				for len(set) < n {
					set[fmt.Sprint("w", r.IntN(n+2))] = struct{}{}
				}
				hits = append(hits, hit{m: store.Memory{ID: fmt.Sprint(round, "-", i)}, stems: toSet(set)})
			}
			var want []hit
			var wantDups []string
			for _, h := range hits {
				if slices.ContainsFunc(want, func(k hit) bool { return jaccardOfMaps(mapSet(h.stems), mapSet(k.stems)) >= duplicateJaccard }) {
					wantDups = append(wantDups, h.m.ID)
					if len(h.stems) >= minNearSize {
						large++
					}
					continue
				}
				want = append(want, h)
			}
			got, dups := removeNearDuplicates(hits)
			if !slices.EqualFunc(got, want, func(a, b hit) bool { return a.m.ID == b.m.ID }) || !slices.Equal(dups, wantDups) {
				t.Fatalf("%s, round %d: kept %d (dups %v), pairwise keeps %d (dups %v)", name, round, len(got), dups, len(want), wantDups)
			}
		}
		if large < 100 {
			t.Errorf("%s: only %d near-duplicates of %d stems or more in 6,000 sets: the test does not exercise their comparison", name, large, minNearSize)
		}
	}
}

// TestNearDuplicateSortedAgreesWithJaccard checks the merges of jaccard
// and the early-exit nearDuplicate against Jaccard computed on maps, on
// random sets of nearby sizes over a small vocabulary, so that many pairs
// are close.
func TestNearDuplicateSortedAgreesWithJaccard(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var sets []map[string]struct{}
	for range 300 {
		n := r.IntN(26)
		set := map[string]struct{}{}
		for len(set) < n {
			set[fmt.Sprint("w", r.IntN(n+3))] = struct{}{}
		}
		sets = append(sets, set)
	}
	for _, a := range sets {
		for _, b := range sets {
			want := jaccardOfMaps(a, b)
			if got := jaccard(sortedSet(a), sortedSet(b)); got != want {
				t.Fatalf("jaccard(%v, %v) = %v, want %v", a, b, got, want)
			}
			if got := nearDuplicate(sortedSet(a), sortedSet(b)); got != (want >= duplicateJaccard) {
				t.Fatalf("nearDuplicate(%v, %v) = %v, Jaccard is %v", a, b, got, want)
			}
		}
	}
}

// jaccardOfMaps is |a ∩ b| / |a ∪ b| by map lookups: the reference the
// merges are checked against.
func jaccardOfMaps(a, b map[string]struct{}) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for k := range a {
		if _, ok := b[k]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// sortedSet is set as a stem set, its terms sorted by Term.Compare. Their
// hashes take four values only, so that the merges meet many terms of one
// hash and must order them by stem.
func sortedSet(set map[string]struct{}) []words.Term {
	terms := make([]words.Term, 0, len(set))
	for s := range set {
		terms = append(terms, words.Term{Hash: uint64(len(s)+int(s[len(s)-1])) % 4, Stem: s})
	}
	slices.SortFunc(terms, words.Term.Compare)
	return terms
}

func mapSet(stems []words.Term) map[string]struct{} {
	set := make(map[string]struct{}, len(stems))
	for _, s := range stems {
		set[s.Stem] = struct{}{}
	}
	return set
}

// stemsOf is the stems of terms, in their order.
func stemsOf(terms []words.Term) []string {
	var out []string
	for _, t := range terms {
		out = append(out, t.Stem)
	}
	return out
}

// TestSortHitsOrder checks sortHits against sorting the hits themselves
// by layer precedence, score, newest and id, on hits with many ties.
func TestSortHitsOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 100 {
		hits := make([]hit, 1+r.IntN(60))
		for i := range hits {
			hits[i] = hit{m: store.Memory{
				ID: fmt.Sprint("m", r.IntN(1000)), Layer: store.Layers[r.IntN(len(store.Layers))],
				CreatedAt: base.Add(time.Duration(r.IntN(3)) * time.Second),
			}, score: float64(r.IntN(4)) / 4}
		}
		want := slices.Clone(hits)
		slices.SortStableFunc(want, func(a, b hit) int {
			return cmp.Or(cmp.Compare(a.m.Layer.Precedence(), b.m.Layer.Precedence()), cmp.Compare(b.score, a.score),
				b.m.CreatedAt.Compare(a.m.CreatedAt), cmp.Compare(a.m.ID, b.m.ID))
		})
		if got := sortHits(hits); !slices.EqualFunc(got, want, func(a, b hit) bool {
			return a.m.ID == b.m.ID && a.m.Layer == b.m.Layer && a.score == b.score && a.m.CreatedAt.Equal(b.m.CreatedAt)
		}) {
			t.Fatalf("round %d: sortHits gave a different order", round)
		}
	}
}

// benchCandidates are 250 candidates like those of the hybrid search
// benchmark: 12-24 words drawn from a Zipf distribution over 5,000.
func benchCandidates() []store.Candidate {
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.07, 2, 4999)
	cands := make([]store.Candidate, 250)
	for i := range cands {
		ws := make([]string, 12+r.IntN(13))
		for j := range ws {
			ws[j] = fmt.Sprintf("w%dx", zipf.Uint64())
		}
		cands[i].Memory.Content = strings.Join(ws, " ")
	}
	return cands
}

// BenchmarkStemSets measures the stem sets of a search's candidates.
func BenchmarkStemSets(b *testing.B) {
	cands := benchCandidates()
	for b.Loop() {
		stemSets(cands)
	}
}

// BenchmarkRemoveNearDuplicates measures near-duplicate removal over a
// search's candidates.
func BenchmarkRemoveNearDuplicates(b *testing.B) {
	cands := benchCandidates()
	sets := stemSets(cands)
	hits := make([]hit, len(cands))
	for i := range hits {
		hits[i] = hit{m: cands[i].Memory, stems: sets[i]}
	}
	for b.Loop() {
		removeNearDuplicates(hits)
	}
}
