package memory

import (
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
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
			if !slices.Equal(q.words, tc.wantWords) || !slices.Equal(q.stems, tc.stems) {
				t.Errorf("parseQuery(%q) = %q / %q, want %q / %q", tc.text, q.words, q.stems, tc.wantWords, tc.stems)
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
		{name: "hybrid blends cosine", cov: 1, rel: 4, maxRel: 4, cos: 0.5, hybrid: true, want: 0.75},
		{name: "negative cosine counts as zero", cov: 1, rel: 4, maxRel: 4, cos: -0.9, hybrid: true, want: 0.5},
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

func TestJaccardAndCosine(t *testing.T) {
	a, b := stemSet("the user prefers dark mode"), stemSet("User prefers dark mode!")
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
