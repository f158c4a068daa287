package memory_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/model2vec"
	"github.com/toolsvc/toolsvc/internal/base/words"
)

// TestGloveVariants measures sentence-embedding variants of the GloVe
// model on the natural set in-process, by similarity (and an emulation of
// ScoreCalibrated's lexical lift), without the stores: the quick loop
// behind the variants table of docs/BENCHMARKS.md ("Recall with a real
// model"). TOOLSVC_EVAL_GLOVE_JSON is the npm package's JSON file
// (scripts/glove.sh fetches it); without it the test is skipped.
// TOOLSVC_EVAL_VARIANTS picks the variants (base, more, expand; base when
// unset). With TOOLSVC_EVAL_MODEL_DIR it first checks the converted
// model's vectors of a few sentences against ones computed here from the
// raw vectors; with TOOLSVC_EVAL_CAUSES set it instead sorts the failing
// questions by cause (docs/BENCHMARKS.md, "Why the remaining questions
// fail").
func TestGloveVariants(t *testing.T) {
	path := os.Getenv("TOOLSVC_EVAL_GLOVE_JSON")
	if path == "" {
		t.Skip("TOOLSVC_EVAL_GLOVE_JSON is not set")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spec, _, err := model2vec.ConvertGloVe(f, model2vec.GloVeOptions{Vocab: 400_000, SIF: -1, CommonComponents: -1})
	if err != nil {
		t.Fatal(err)
	}
	raw := spec.Rows[:len(spec.Rows)-1]
	tokens := spec.Tokens[:len(spec.Tokens)-1]
	index := make(map[string]int, len(tokens))
	for i, w := range tokens {
		index[w] = i
	}
	var hn float64
	for r := 1; r <= len(tokens); r++ {
		hn += 1 / float64(r)
	}
	ns := loadNaturalSet(t)
	if dir := os.Getenv("TOOLSVC_EVAL_MODEL_DIR"); dir != "" {
		// The loader and the conversion against vectors computed here from
		// the raw JSON: the SIF-weighted mean with punctuation weighing
		// nothing, the common component of the vocabulary removed, normalised.
		m, err := model2vec.Load(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		e := newVariantEmbedder(gloveVariant{vocab: 100_000, a: 1e-3, pcs: 1, tok: "nopunct", pcFrom: "vocab"}, raw, tokens, index, hn)
		e.setDirs(ns)
		texts := []string{"Who runs the phone app group?", "The Android app's mailing list is android-app@lists.example.com.",
			"When does someone screen server-side job applicants?", "Bogdan interviews backend candidates on Tuesday afternoons."}
		got, _ := m.Embed(t.Context(), texts)
		for i, text := range texts {
			want := e.embedIDs(e.ids(text))
			g := make([]float64, len(got[i]))
			for j, x := range got[i] {
				g[j] = float64(x)
			}
			if c := dot(g, want); c < 0.9999 {
				t.Errorf("%q: the model's vector has cosine %.6f with the hand-computed one", text, c)
			}
		}
	}
	if os.Getenv("TOOLSVC_EVAL_CAUSES") != "" {
		e := newVariantEmbedder(gloveVariant{vocab: 100_000, a: 1e-3, pcs: 1, tok: "nopunct", pcFrom: "vocab", expand: 20}, raw, tokens, index, hn)
		e.setDirs(ns)
		e.causes(ns)
		return
	}
	for _, v := range gloveVariants() {
		t.Run(v.name, func(t *testing.T) {
			e := newVariantEmbedder(v, raw, tokens, index, hn)
			fmt.Printf("variant %-44s %s\n", v.name, e.evaluate(ns))
		})
	}
}

type gloveVariant struct {
	name  string
	vocab int
	a     float64 // 0: plain mean
	pcs   int
	// tok: "bert" (the model's: punctuation tokens, stop words kept),
	// "words" (words.All: no punctuation), "content" (words.Content).
	tok string
	// pcFrom: "vocab" (ConvertGloVe's) or "corpus" (the memories).
	pcFrom string
	// expand: the lexical channel also matches each query word's expand
	// nearest GloVe neighbours (stemmed), weighing lexW in the fuzzy "or".
	expand int
	lexW   float64
}

func gloveVariants() []gloveVariant {
	var out []gloveVariant
	add := func(v gloveVariant) {
		if v.pcFrom == "" {
			v.pcFrom = "vocab"
		}
		v.name = fmt.Sprintf("%s/v%dk/a%g/pc%d-%s", v.tok, v.vocab/1000, v.a, v.pcs, v.pcFrom)
		if v.expand > 0 {
			v.name += fmt.Sprintf("/nn%d-w%g", v.expand, v.lexW)
		}
		out = append(out, v)
	}
	sel := os.Getenv("TOOLSVC_EVAL_VARIANTS")
	if sel == "" {
		sel = "base"
	}
	for _, s := range strings.Split(sel, ",") {
		switch s {
		case "base":
			add(gloveVariant{vocab: 100_000, a: 1e-3, pcs: 1, tok: "nopunct"})
			add(gloveVariant{vocab: 100_000, a: 1e-3, pcs: 2, tok: "nopunct"})
			add(gloveVariant{vocab: 100_000, a: 1e-3, pcs: 0, tok: "nopunct"})
			add(gloveVariant{vocab: 100_000, a: 1e-4, pcs: 1, tok: "nopunct"})
			add(gloveVariant{vocab: 100_000, a: 1e-2, pcs: 1, tok: "nopunct"})
			add(gloveVariant{vocab: 50_000, a: 1e-3, pcs: 1, tok: "nopunct"})
			add(gloveVariant{vocab: 200_000, a: 1e-3, pcs: 1, tok: "nopunct"})
			add(gloveVariant{vocab: 100_000, a: 1e-3, pcs: 1, tok: "bert"})
			add(gloveVariant{vocab: 100_000, a: 0, pcs: 0, tok: "bert"})
			add(gloveVariant{vocab: 100_000, a: 1e-3, pcs: 0, tok: "bert"})
			add(gloveVariant{vocab: 100_000, a: 1e-3, pcs: 1, tok: "words"})
			add(gloveVariant{vocab: 100_000, a: 0, pcs: 0, tok: "content"})
			add(gloveVariant{vocab: 100_000, a: 1e-3, pcs: 0, tok: "content"})
			add(gloveVariant{vocab: 100_000, a: 1e-3, pcs: 1, tok: "content"})
		case "expand":
			for _, k := range []int{5, 10, 20} {
				for _, w := range []float64{0.3, 0.6} {
					add(gloveVariant{vocab: 100_000, a: 1e-3, pcs: 1, tok: "nopunct", expand: k, lexW: w})
				}
			}
		case "more":
			add(gloveVariant{vocab: 100_000, a: 0, pcs: 1, tok: "content", pcFrom: "corpus"})
			add(gloveVariant{vocab: 100_000, a: 1e-3, pcs: 1, tok: "content", pcFrom: "corpus"})
			add(gloveVariant{vocab: 100_000, a: 1e-2, pcs: 0, tok: "content"})
			add(gloveVariant{vocab: 50_000, a: 0, pcs: 0, tok: "content"})
			add(gloveVariant{vocab: 50_000, a: 1e-3, pcs: 0, tok: "content"})
			add(gloveVariant{vocab: 50_000, a: 1e-3, pcs: 1, tok: "content"})
			add(gloveVariant{vocab: 200_000, a: 0, pcs: 0, tok: "content"})
			add(gloveVariant{vocab: 100_000, a: 0, pcs: 0, tok: "words"})
		}
	}
	return out
}

type variantEmbedder struct {
	v       gloveVariant
	rows    [][]float32
	weights []float64
	freq    []float64
	index   map[string]int
	tokens  []string
	dirs    [][]float64
	raw     [][]float32
	nn      map[string][]string
}

func newVariantEmbedder(v gloveVariant, raw [][]float32, tokens []string, index map[string]int, hn float64) *variantEmbedder {
	e := &variantEmbedder{v: v, rows: raw[:v.vocab], tokens: tokens[:v.vocab], index: index, raw: raw}
	e.freq = make([]float64, v.vocab)
	e.weights = make([]float64, v.vocab)
	for i := range e.freq {
		e.freq[i] = 1 / (float64(i+1) * hn)
		e.weights[i] = 1
		if v.a > 0 {
			e.weights[i] = v.a / (v.a + e.freq[i])
		}
		if v.tok == "nopunct" && len(words.Split(e.tokens[i])) == 0 {
			e.weights[i] = 0 // punctuation alone weighs nothing (ConvertGloVe)
		}
	}
	return e
}

func (e *variantEmbedder) ids(text string) []int {
	var toks []string
	switch e.v.tok {
	case "bert", "nopunct":
		// The model's BERT pre-tokenisation: punctuation is a token.
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
				b.WriteString(" " + string(r) + " ")
			} else {
				b.WriteRune(r)
			}
		}
		toks = strings.Fields(b.String())
	case "words":
		toks = words.Split(text)
	case "content":
		toks = words.Content(text)
	}
	var ids []int
	for _, w := range toks {
		if id, ok := e.index[w]; ok && id < len(e.rows) {
			ids = append(ids, id)
		}
	}
	return ids
}

func (e *variantEmbedder) embedIDs(ids []int) []float64 {
	dim := len(e.rows[0])
	v := make([]float64, dim)
	for _, id := range ids {
		for j, x := range e.rows[id] {
			v[j] += e.weights[id] * float64(x)
		}
	}
	for _, u := range e.dirs {
		var dot float64
		for j := range v {
			dot += v[j] * u[j]
		}
		for j := range v {
			v[j] -= dot * u[j]
		}
	}
	var n float64
	for _, x := range v {
		n += x * x
	}
	if n > 0 {
		n = 1 / math.Sqrt(n)
		for j := range v {
			v[j] *= n
		}
	}
	return v
}

// topDirs is the top k eigenvectors of the second-moment matrix of vecs
// (each counted by its weight), by power iteration with deflation.
func topDirs(vecs [][]float64, wts []float64, k int) [][]float64 {
	dim := len(vecs[0])
	m := make([]float64, dim*dim)
	for i, r := range vecs {
		for a := range dim {
			ra := r[a] * wts[i]
			for b := range dim {
				m[a*dim+b] += ra * r[b]
			}
		}
	}
	var dirs [][]float64
	for range k {
		u := make([]float64, dim)
		for j := range u {
			u[j] = 1 / math.Sqrt(float64(dim+j))
		}
		var lambda float64
		for range 500 {
			next := make([]float64, dim)
			for a := range dim {
				for b := range dim {
					next[a] += m[a*dim+b] * u[b]
				}
			}
			var n float64
			for _, x := range next {
				n += x * x
			}
			n = math.Sqrt(n)
			for j := range next {
				next[j] /= n
			}
			u, lambda = next, n
		}
		dirs = append(dirs, u)
		for a := range dim {
			for b := range dim {
				m[a*dim+b] -= lambda * u[a] * u[b]
			}
		}
	}
	return dirs
}

type variantScores struct {
	r1, r5, r5pos, mrr, unanswered, floor, medianPair float64
}

func (s variantScores) String() string {
	return fmt.Sprintf("recall@1 %.3f  recall@5 %.3f  MRR %.3f  unanswerable-empty %.3f  floor %.4f  median rescaled pair %.3f  recall@5 above floor %.3f",
		s.r1, s.r5, s.mrr, s.unanswered, s.floor, s.medianPair, s.r5pos)
}

func (e *variantEmbedder) evaluate(ns naturalSet) variantScores {
	e.setDirs(ns)
	return e.score(ns)
}

func (e *variantEmbedder) setDirs(ns naturalSet) {
	if e.v.pcs > 0 {
		switch e.v.pcFrom {
		case "vocab":
			vecs := make([][]float64, len(e.rows))
			wts := make([]float64, len(e.rows))
			for i, r := range e.rows {
				vecs[i] = make([]float64, len(r))
				for j, x := range r {
					vecs[i][j] = float64(x)
				}
				wts[i] = e.freq[i] * e.weights[i] * e.weights[i]
			}
			e.dirs = topDirs(vecs, wts, e.v.pcs)
		case "corpus":
			var vecs [][]float64
			var wts []float64
			for _, m := range ns.memories {
				vecs = append(vecs, e.embedIDs(e.ids(m.Content)))
				wts = append(wts, 1)
			}
			e.dirs = topDirs(vecs, wts, e.v.pcs)
		}
	}
}

func (e *variantEmbedder) score(ns naturalSet) variantScores {
	// Floor: as model2vec's similarityFloor, 8-word texts drawn by
	// frequency, through the variant's own filter.
	cum := make([]float64, len(e.freq))
	var total float64
	for i, p := range e.freq {
		total += p
		cum[i] = total
	}
	rng := rand.New(rand.NewPCG(37, 2017))
	text := func() []float64 {
		var ids []int
		for len(ids) < 8 {
			x := rng.Float64() * total
			id, _ := slices.BinarySearch(cum, x)
			id = min(id, len(e.freq)-1)
			if e.v.tok == "content" && !words.IsContent(e.tokens[id]) {
				continue
			}
			if e.v.tok != "bert" && len(words.Split(e.tokens[id])) != 1 {
				continue
			}
			ids = append(ids, id)
		}
		return e.embedIDs(ids)
	}
	sims := make([]float64, 4000)
	for i := range sims {
		sims[i] = dot(text(), text())
	}
	slices.Sort(sims)
	floor := sims[int(0.99*float64(len(sims)-1))]
	mems := make([][]float64, len(ns.memories))
	stems := make([][]words.Term, len(ns.memories))
	pos := map[string]int{}
	for i, m := range ns.memories {
		mems[i] = e.embedIDs(e.ids(m.Content))
		stems[i] = words.Terms(m.Content)
		pos[m.ID] = i
	}
	scores := func(q string) []float64 {
		qv := e.embedIDs(e.ids(q))
		qs := words.Terms(q)
		var exp [][]string // per query word: its stem and its neighbours' stems
		if e.v.expand > 0 {
			seen := map[string]bool{}
			for _, w := range words.Content(q) {
				if st := words.Stem(w); !seen[st] {
					seen[st] = true
					exp = append(exp, append([]string{st}, e.neighbours(w)...))
				}
			}
		}
		out := make([]float64, len(mems))
		for i, mv := range mems {
			sim := min(1, (dot(qv, mv)-floor)/(1-floor)) // unclamped: ranks below the floor too
			// ScoreCalibrated, relevance taken as the coverage.
			n := 0
			for _, s := range qs {
				if _, ok := slices.BinarySearchFunc(stems[i], s, words.Term.Compare); ok {
					n++
				}
			}
			cov := 0.0
			if len(qs) > 0 {
				cov = float64(n) / float64(len(qs))
			}
			if cov > 0.5 {
				sim = 1 - (1-max(0, sim))*(1-cov)
			} else if len(exp) > 0 {
				hit := 0
				for _, alts := range exp {
					for _, st := range alts {
						if slices.ContainsFunc(stems[i], func(t words.Term) bool { return t.Stem == st }) {
							hit++
							break
						}
					}
				}
				ecov := float64(hit) / float64(len(exp))
				sim = 1 - (1-max(0, sim))*(1-e.v.lexW*ecov)
			}
			out[i] = sim
		}
		return out
	}
	var s variantScores
	s.floor = floor
	var pairSims []float64
	for _, p := range ns.pairs {
		sc := scores(p.Query)
		want := pos[p.Expected]
		rank := 0
		for i, x := range sc {
			if i != want && x > sc[want] {
				rank++
			}
		}
		pairSims = append(pairSims, sc[want])
		if rank == 0 {
			s.r1++
		}
		if rank < 5 {
			s.r5++
			if sc[want] > 0 {
				s.r5pos++
			}
		}
		if rank < 10 {
			s.mrr += 1 / float64(rank+1)
		}
	}
	for _, u := range ns.unanswerable {
		if slices.Max(scores(u.Query)) < 0.7 {
			s.unanswered++
		}
	}
	slices.Sort(pairSims)
	s.medianPair = pairSims[len(pairSims)/2]
	n := float64(len(ns.pairs))
	s.r1, s.r5, s.r5pos, s.mrr, s.unanswered = s.r1/n, s.r5/n, s.r5pos/n, s.mrr/n, s.unanswered/float64(len(ns.unanswerable))
	return s
}

// causes sorts the questions whose memory is not in the first 5 (by
// similarity, as the shipped model ranks them) by why, and prints counts
// and examples.
func (e *variantEmbedder) causes(ns naturalSet) {
	expected := map[string]bool{}
	for _, p := range ns.pairs {
		expected[p.Expected] = true
	}
	mems := make([][]float64, len(ns.memories))
	pos := map[string]int{}
	for i, m := range ns.memories {
		mems[i] = e.embedIDs(e.ids(m.Content))
		pos[m.ID] = i
	}
	counts := map[string]int{}
	examples := map[string][]string{}
	total := 0
	for _, p := range ns.pairs {
		qv := e.embedIDs(e.ids(p.Query))
		want := pos[p.Expected]
		sc := make([]float64, len(mems))
		best := 0
		for i, mv := range mems {
			sc[i] = dot(qv, mv)
			if sc[i] > sc[best] {
				best = i
			}
		}
		rank := 0
		for i, x := range sc {
			if i != want && x > sc[want] {
				rank++
			}
		}
		if rank < 5 {
			continue
		}
		total++
		mc := ns.memories[want].Content
		// Names and unknown words: capitalised words past the first, and
		// words outside the vocabulary.
		content := words.Content(mc)
		named := 0
		for _, w := range content {
			if _, ok := e.index[w]; !ok {
				named++
				continue
			}
			for _, f := range strings.Fields(mc)[1:] {
				if strings.EqualFold(strings.Trim(f, ".,'s"), w) && f[0] >= 'A' && f[0] <= 'Z' {
					named++
					break
				}
			}
		}
		memStems := map[string]bool{}
		for _, w := range content {
			memStems[words.Stem(w)] = true
		}
		reach := false
		for _, w := range words.Content(p.Query) {
			for _, st := range e.neighbours(w) {
				if memStems[st] {
					reach = true
				}
			}
		}
		first := ns.memories[best].ID
		kind := "another hand-written memory"
		switch {
		case strings.HasPrefix(first, "g-"):
			kind = "a generated distractor"
		case !expected[first]:
			kind = "a hand-written near miss"
		}
		var cause string
		switch {
		case len(content) > 0 && 2*named >= len(content):
			cause = "name-heavy memory (half its content words are names or unknown)"
		case !reach:
			cause = "no query word's 20 GloVe neighbours is a word of the memory"
		default:
			cause = "a neighbour reaches the memory, yet it ranks below others"
		}
		key := cause + " | first: " + kind
		counts[key]++
		counts["first: "+kind]++
		counts["cause: "+cause]++
		if rank >= 10 {
			counts["rank > 10"]++
		}
		if len(examples[key]) < 2 {
			examples[key] = append(examples[key], fmt.Sprintf("%q -> %q (rank %d; first %q)", p.Query, mc, rank+1, ns.memories[best].Content))
		}
	}
	fmt.Printf("causes: %d of %d questions fail (memory not in the first 5)\n", total, len(ns.pairs))
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf("cause %4d  %s\n", counts[k], k)
		for _, x := range examples[k] {
			fmt.Printf("cause        e.g. %s\n", x)
		}
	}
}

// neighbours is the stems of w's e.v.expand nearest content words among
// the 50,000 most frequent, by cosine of the raw GloVe vectors.
func (e *variantEmbedder) neighbours(w string) []string {
	if e.nn == nil {
		e.nn = map[string][]string{}
	}
	if got, ok := e.nn[w]; ok {
		return got
	}
	id, ok := e.index[w]
	if !ok || id >= len(e.rows) {
		e.nn[w] = nil
		return nil
	}
	norm := func(r []float32) float64 {
		var n float64
		for _, x := range r {
			n += float64(x) * float64(x)
		}
		return math.Sqrt(n)
	}
	type cand struct {
		id  int
		cos float64
	}
	var cs []cand
	wr, wn := e.raw[id], norm(e.raw[id])
	for j := range min(50_000, len(e.raw)) {
		if j == id || !words.IsContent(e.tokens[j]) || len(words.Split(e.tokens[j])) != 1 {
			continue
		}
		var d float64
		for k, x := range e.raw[j] {
			d += float64(x) * float64(wr[k])
		}
		cs = append(cs, cand{j, d / (wn * norm(e.raw[j]))})
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.cos > b.cos {
			return -1
		}
		return 1
	})
	var out []string
	for _, c := range cs[:min(e.v.expand, len(cs))] {
		out = append(out, words.Stem(e.tokens[c.id]))
	}
	e.nn[w] = out
	return out
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
