package model2vec_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/model2vec"
)

// benchModel is the model of TOOLSVC_EVAL_MODEL_DIR (make eval sets it to
// the GloVe model of scripts/glove.sh), or a small WordLevel model written
// here: the cost per text depends on its words, not on the vocabulary's
// size (a map lookup each), so the figures hold for both.
func benchModel(b *testing.B) *model2vec.Model {
	b.Helper()
	dir := os.Getenv("TOOLSVC_EVAL_MODEL_DIR")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "bench")
		words := []string{"the", "payments", "service", "stores", "invoices", "in", "postgresql", "16", ".", "which",
			"relational", "database", "holds", "billing", "records", "?", "[UNK]"}
		rows := make([][]float32, len(words))
		for i := range rows {
			rows[i] = make([]float32, 100)
			for j := range rows[i] {
				rows[i][j] = float32((i*31+j*17)%13) / 13
			}
		}
		if err := model2vec.Write(dir, model2vec.Spec{Tokens: words, Rows: rows, WordLevel: true, Normalize: true}); err != nil {
			b.Fatal(err)
		}
	}
	m, err := model2vec.Load(dir, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("model %s, %d dimensions", m.Name(), m.Dim())
	return m
}

// BenchmarkEmbedMemory is the cost of embedding one memory (a sentence of
// the natural set's median length) on add-memory and reembed.
func BenchmarkEmbedMemory(b *testing.B) {
	m := benchModel(b)
	texts := []string{"The payments service stores invoices in PostgreSQL 16."}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Embed(b.Context(), texts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEmbedQuery is the cost of embedding a search's question.
func BenchmarkEmbedQuery(b *testing.B) {
	m := benchModel(b)
	texts := []string{"Which relational database holds the billing records?"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Embed(b.Context(), texts); err != nil {
			b.Fatal(err)
		}
	}
}
