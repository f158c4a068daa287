package model2vec_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/model2vec"
)

// wordLevelSpec is a tiny whole-word model with per-token weights, the
// layout ConvertGloVe writes.
func wordLevelSpec() model2vec.Spec {
	return model2vec.Spec{
		Tokens: []string{"the", "team", "mobile", "café", "'", "s", "[UNK]"},
		Rows: [][]float32{
			{4, 4, 4}, {1, 0, 0}, {0, 2, 0}, {0, 0, 3}, {5, 5, 5}, {1, 1, 1}, {9, 9, 9},
		},
		Weights:     []float32{0.25, 1, 0.5, 2, 0, 0.5, 0},
		WordLevel:   true,
		KeepAccents: true,
	}
}

// TestWordLevelEmbedsWholeWordsWithWeights checks the WordLevel tokenizer
// and the weights tensor against vectors computed by hand: a text's vector
// is Σ weight(token)·row(token) / (number of known tokens).
func TestWordLevelEmbedsWholeWordsWithWeights(t *testing.T) {
	m := load(t, wordLevelSpec())
	tests := []struct {
		text string
		want []float32
	}{
		// the (0.25·[4,4,4]) + team (1·[1,0,0]) + mobile (0.5·[0,2,0]), over 3.
		{"The Mobile team", []float32{2.0 / 3, 2.0 / 3, 1.0 / 3}},
		// "teams" is not a word of the vocabulary and is never split into
		// pieces (as WordPiece would): it is unknown and dropped.
		{"teams", []float32{0, 0, 0}},
		{"teams team", []float32{1, 0, 0}},
		// Accents are kept (café is its own word), case is folded; "cafe" is unknown.
		{"CAFÉ cafe", []float32{0, 0, 6}},
		// Punctuation splits: team ' s -> (1·[1,0,0] + 0·[5,5,5] + 0.5·[1,1,1]) / 3.
		{"team's", []float32{1.5 / 3, 0.5 / 3, 0.5 / 3}},
	}
	for _, tc := range tests {
		got, err := m.Embed(t.Context(), []string{tc.text})
		if err != nil {
			t.Fatal(err)
		}
		if !near(got[0], tc.want) {
			t.Errorf("Embed(%q) = %v, want %v", tc.text, got[0], tc.want)
		}
	}
}

// TestWeightsApplyToWordPiece: the weights tensor scales WordPiece tokens
// the same way (model2vec's own models carry one).
func TestWeightsApplyToWordPiece(t *testing.T) {
	s := spec()
	s.Weights = []float32{0, 0, 2, 1, 1, 1, 1, 1, 1}
	got, err := load(t, s).Embed(t.Context(), []string{"deploys"}) // deploy (2·[1,0,0]) ##s ([0,1,0]), over 2
	if err != nil {
		t.Fatal(err)
	}
	if !near(got[0], []float32{1, 0.5, 0}) {
		t.Fatalf("weighted deploys = %v", got[0])
	}
}

// TestLoadRefusesBadWordLevelModels: what the loader cannot embed
// correctly is refused, with the reason.
func TestLoadRefusesBadWordLevelModels(t *testing.T) {
	tokenizer := func(edit func(map[string]any)) func(dir string) error {
		return func(dir string) error {
			b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
			if err != nil {
				return err
			}
			var tj map[string]any
			if err := json.Unmarshal(b, &tj); err != nil {
				return err
			}
			edit(tj)
			b, err = json.Marshal(tj)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o600)
		}
	}
	model := func(tj map[string]any) map[string]any { return tj["model"].(map[string]any) }
	tests := []struct {
		name string
		spec func() model2vec.Spec
		edit func(dir string) error
		want string
	}{
		{"unknown model type", wordLevelSpec, tokenizer(func(tj map[string]any) { model(tj)["type"] = "BPE" }), `model type "BPE" is not supported`},
		{"no unk token", wordLevelSpec, tokenizer(func(tj map[string]any) { model(tj)["unk_token"] = "<unk>" }), `unk_token "<unk>" is not in the vocabulary`},
		{"other pre-tokenizer", wordLevelSpec, tokenizer(func(tj map[string]any) { tj["pre_tokenizer"] = map[string]any{"type": "Whitespace"} }), "pre_tokenizer must be BertPreTokenizer"},
		{"ids with a gap", wordLevelSpec, tokenizer(func(tj map[string]any) { model(tj)["vocab"].(map[string]any)["team"] = 99 }), "ids must be 0..6"},
		{"too few weights", func() model2vec.Spec {
			s := wordLevelSpec()
			s.Tokens, s.Rows = append(s.Tokens, "extra"), append(s.Rows, []float32{1, 1, 1})
			s.Weights = append(s.Weights, 1)
			return s
		}, func(dir string) error { return rewriteWeights(dir, []float32{1, 1, 1}) }, "weights has 3 values for a vocabulary of 8"},
		{"negative weight", wordLevelSpec, func(dir string) error { return rewriteWeights(dir, []float32{1, 1, -1, 1, 1, 1, 1}) }, "weights[2] = -1 is not a finite, non-negative scale"},
		{"NaN weight", wordLevelSpec, func(dir string) error {
			return rewriteWeights(dir, []float32{1, float32(math.NaN()), 1, 1, 1, 1, 1})
		}, "weights[1] = NaN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			if err := model2vec.Write(dir, tc.spec()); err != nil {
				t.Fatal(err)
			}
			if err := tc.edit(dir); err != nil {
				t.Fatal(err)
			}
			_, err := model2vec.Load(dir, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// rewriteWeights replaces the weights tensor of dir's model.safetensors
// with w (the embeddings are kept).
func rewriteWeights(dir string, w []float32) error {
	path := filepath.Join(dir, "model.safetensors")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	n := binary.LittleEndian.Uint64(b)
	var header map[string]map[string]any
	if err := json.Unmarshal(b[8:8+n], &header); err != nil {
		return err
	}
	data := b[8+n:]
	emb := header["embeddings"]["data_offsets"].([]any)
	end := int(emb[1].(float64))
	data = data[:end:end]
	start := len(data)
	for _, v := range w {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
	}
	header["weights"] = map[string]any{"dtype": "F32", "shape": []int{len(w)}, "data_offsets": []int{start, len(data)}}
	hb, err := json.Marshal(header)
	if err != nil {
		return err
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hb)))
	out = append(append(out, hb...), data...)
	return os.WriteFile(path, out, 0o600)
}
