package model2vec_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/model2vec"
)

// gloveJSON is the npm package's layout: vectors carry two extra values
// (the norm and the index) after the dimensions.
const gloveJSON = `{"precision":8,"l2NormIndex":2,"wordIndex":3,"size":4,"dimensions":2,
 "words":["the","team","mobile","zebra"],
 "vectors":{"zebra":[9,9,12.7,3],"the":[1,0,1,0],"team":[0,1,1,1],"mobile":[3,4,5,2]},
 "unkVector":[0,0,0,-1]}`

func TestConvertGloVeWeightsAndVocabulary(t *testing.T) {
	spec, stats, err := model2vec.ConvertGloVe(strings.NewReader(gloveJSON), model2vec.GloVeOptions{Vocab: 3, SIF: 0.1, CommonComponents: -1})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Words != 4 || stats.Kept != 3 || stats.Dim != 2 {
		t.Fatalf("stats %+v", stats)
	}
	if got := strings.Join(spec.Tokens, " "); got != "the team mobile [UNK]" {
		t.Fatalf("tokens %q: the 3 most frequent words, then [UNK]", got)
	}
	// Zipf over the 4 source words: p(r) = 1/(r·H_4), H_4 = 25/12; weight
	// a/(a+p) with a = 0.1.
	h := 25.0 / 12
	for i, want := range []float64{0.1 / (0.1 + 1/h), 0.1 / (0.1 + 1/(2*h)), 0.1 / (0.1 + 1/(3*h)), 0} {
		if math.Abs(float64(spec.Weights[i])-want) > 1e-6 {
			t.Errorf("weight of %q = %v, want %v", spec.Tokens[i], spec.Weights[i], want)
		}
	}
	if !near(spec.Rows[2], []float32{3, 4}) || !near(spec.Rows[3], []float32{0, 0}) {
		t.Errorf("rows %v: the first 2 values of each vector, then a zero [UNK] row", spec.Rows)
	}

	// The converted model loads and embeds by hand-computed weights:
	// (w_team·[0,1] + w_mobile·[3,4]) / 2, normalised.
	dir := filepath.Join(t.TempDir(), "glove")
	if err := model2vec.Write(dir, spec); err != nil {
		t.Fatal(err)
	}
	m, err := model2vec.Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Embed(t.Context(), []string{"Mobile team zebra"})
	if err != nil {
		t.Fatal(err)
	}
	wt, wm := spec.Weights[1], spec.Weights[2]
	x, y := 3*wm, wt+4*wm
	n := float32(math.Hypot(float64(x), float64(y)))
	if !near(got[0], []float32{x / n, y / n}) {
		t.Fatalf("Embed = %v, want %v", got[0], []float32{x / n, y / n})
	}
}

// TestConvertGloVeRemovesTheCommonComponent: vectors that all lean one
// way lose that direction; what is left is orthogonal to it.
func TestConvertGloVeRemovesTheCommonComponent(t *testing.T) {
	const in = `{"dimensions":2,"words":["a","b","c"],"vectors":{"a":[10,10.5],"b":[10,9.5],"c":[9,9]}}`
	spec, stats, err := model2vec.ConvertGloVe(strings.NewReader(in), model2vec.GloVeOptions{SIF: -1})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Weights != nil {
		t.Fatalf("SIF < 0 writes no weights, got %v", spec.Weights)
	}
	if stats.Removed < 0.99 {
		t.Fatalf("removed %.4f of the energy; the rows lie almost on one line", stats.Removed)
	}
	// The common direction is close to (1,1)/√2 (counted by frequency, it
	// leans a little towards a): a and b keep opposite parts of their
	// difference, c (on the line) keeps under 1% of its length.
	if r := spec.Rows[2]; math.Hypot(float64(r[0]), float64(r[1])) > 0.127 {
		t.Errorf("c = %v, want about 0", r)
	}
	a, b := spec.Rows[0], spec.Rows[1]
	if a[0]*b[0]+a[1]*b[1] >= 0 || math.Abs(float64(a[0]+a[1])) > 0.2 {
		t.Errorf("a = %v, b = %v: want opposite, orthogonal to (1,1)", a, b)
	}
}

func TestConvertGloVeRefusesOtherLayouts(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"not an object", `[1,2]`, "not a JSON object"},
		{"vectors first", `{"vectors":{"a":[1]},"dimensions":1,"words":["a"]}`, `"dimensions" and "words" must come before "vectors"`},
		{"missing vector", `{"dimensions":1,"words":["a","b"],"vectors":{"a":[1]}}`, `word "b" has no vector`},
		{"short vector", `{"dimensions":2,"words":["a"],"vectors":{"a":[1]}}`, `vectors["a"] has 1 values, want at least 2`},
		{"repeated word", `{"dimensions":1,"words":["a","a"],"vectors":{"a":[1]}}`, "repeated"},
		{"no words", `{"dimensions":1}`, `no "dimensions" or no "words"`},
		{"truncated", `{"dimensions":1,"words":["a"],"vectors":{"a":[1`, "vectors"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := model2vec.ConvertGloVe(strings.NewReader(tc.in), model2vec.GloVeOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ConvertGloVe: %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestConvertGloVePunctuationWeighsNothing: a token of punctuation alone
// gets weight 0, so "Team's mobile-team?" embeds as the hand-computed
// SIF mean of team, mobile, team (the apostrophe, the hyphen and the
// question mark add nothing; "s" is unknown and dropped).
func TestConvertGloVePunctuationWeighsNothing(t *testing.T) {
	const js = `{"dimensions":2,"words":["?","team","-","'","mobile"],
 "vectors":{"?":[5,5,0,0],"team":[0,1,0,1],"-":[-3,2,0,2],"'":[7,-1,0,3],"mobile":[3,4,0,4]}}`
	spec, _, err := model2vec.ConvertGloVe(strings.NewReader(js), model2vec.GloVeOptions{SIF: 0.1, CommonComponents: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := 1 + 1/2.0 + 1/3.0 + 1/4.0 + 1/5.0
	wTeam, wMobile := 0.1/(0.1+1/(2*h)), 0.1/(0.1+1/(5*h))
	for i, want := range []float64{0, wTeam, 0, 0, wMobile, 0} {
		if math.Abs(float64(spec.Weights[i])-want) > 1e-6 {
			t.Errorf("weight of %q = %v, want %v", spec.Tokens[i], spec.Weights[i], want)
		}
	}
	dir := filepath.Join(t.TempDir(), "glove")
	if err := model2vec.Write(dir, spec); err != nil {
		t.Fatal(err)
	}
	m, err := model2vec.Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Embed(t.Context(), []string{"Team's mobile-team?"})
	if err != nil {
		t.Fatal(err)
	}
	x, y := 3*wMobile, 2*wTeam+4*wMobile
	n := math.Hypot(x, y)
	if want := []float32{float32(x / n), float32(y / n)}; !near(got[0], want) {
		t.Fatalf("Embed = %v, want %v", got[0], want)
	}
}
