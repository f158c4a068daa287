package model2vec_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/model2vec"
)

func spec() model2vec.Spec {
	return model2vec.Spec{
		Tokens: []string{"[PAD]", "[UNK]", "deploy", "##s", "tuesday", "ship", "production", ",", "cafe"},
		Rows: [][]float32{
			{0, 0, 0}, {9, 9, 9}, // [UNK] must never count
			{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}, {0.5, 0.25, 0}, {0, 0, 4}, {2, 0, 0},
		},
	}
}

func load(t *testing.T, s model2vec.Spec) *model2vec.Model {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "potion-test")
	if err := model2vec.Write(dir, s); err != nil {
		t.Fatal(err)
	}
	m, err := model2vec.Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func near(a, b []float32) bool {
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-3 {
			return false
		}
	}
	return len(a) == len(b)
}

func TestEmbedMeansTokenRows(t *testing.T) {
	for _, f16 := range []bool{false, true} {
		s := spec()
		s.F16 = f16
		m := load(t, s)
		if m.Name() != "potion-test" || m.Dim() != 3 {
			t.Fatalf("name %q dim %d", m.Name(), m.Dim())
		}
		tests := []struct {
			text string
			want []float32
		}{
			// "Deploys" -> deploy ##s; "Tuesday," -> tuesday + "," (punctuation splits).
			{"Deploys Tuesday,", []float32{1.0 / 4, 1.0 / 4, 5.0 / 4}},
			// Accents are stripped and case folded: "Café" -> cafe.
			{"Café", []float32{2, 0, 0}},
			// Unknown words are dropped before pooling, not averaged in.
			{"ship zzz", []float32{1, 1, 0}},
			{"qqq", []float32{0, 0, 0}},
			{"", []float32{0, 0, 0}},
		}
		for _, tc := range tests {
			got, err := m.Embed(t.Context(), []string{tc.text})
			if err != nil {
				t.Fatal(err)
			}
			if !near(got[0], tc.want) {
				t.Errorf("f16=%v Embed(%q) = %v, want %v", f16, tc.text, got[0], tc.want)
			}
		}
	}
}

func TestEmbedNormalizes(t *testing.T) {
	s := spec()
	s.Normalize = true
	got, err := load(t, s).Embed(t.Context(), []string{"ship"})
	if err != nil {
		t.Fatal(err)
	}
	if want := float32(1 / math.Sqrt2); !near(got[0], []float32{want, want, 0}) {
		t.Fatalf("normalised ship = %v", got[0])
	}
}

func TestLoadRefusesWhatItCannotEmbed(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	if err := model2vec.Write(good, spec()); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(good, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name, file, content, want string
	}{
		{"unigram tokenizer", "tokenizer.json", strings.Replace(read("tokenizer.json"), `"WordPiece"`, `"Unigram"`, 1), "not supported"},
		{"truncated table", "model.safetensors", read("model.safetensors")[:40], "model.safetensors"},
		{"junk header", "model.safetensors", "\x05\x00\x00\x00\x00\x00\x00\x00{junk", "header"},
		{"missing tokenizer", "tokenizer.json", "", "tokenizer.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			if err := model2vec.Write(dir, spec()); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tc.file)
			var err error
			if tc.content == "" {
				err = os.Remove(path)
			} else {
				err = os.WriteFile(path, []byte(tc.content), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = model2vec.Load(dir, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
