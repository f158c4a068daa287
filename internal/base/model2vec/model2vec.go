// Package model2vec loads a static embedding model in the model2vec format
// (a tokenizer.json and a model.safetensors embedding table, such as
// minishlab's potion-base-8M) and embeds texts with it in pure Go, offline:
// a text's vector is the mean of its tokens' rows, normalised to unit
// length when the model's config.json says so.
//
// Only what such models use is supported: a WordPiece or a WordLevel
// tokenizer (whole words, as in a converted word-vector model: see
// ConvertGloVe) with the BERT normaliser and pre-tokeniser, and F32 or
// F16 tensors named "embeddings" (required), "weights" (optional, one
// scale per token: a token's row counts weights[id] times in the mean) and
// "mappings" (optional, token id to row). Anything else is refused at load
// with the reason, never embedded wrongly.
package model2vec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// Model is a loaded static embedding model. It is safe for concurrent use.
type Model struct {
	name      string
	dim       int
	rows      []float32 // len(vocab rows) * dim, row-major
	weights   []float32 // per token id, or nil
	mappings  []int32   // token id -> row, or nil
	normalize bool
	tok       *wordPiece
	floor     float64
}

// config is the part of config.json the model needs.
type config struct {
	Normalize *bool `json:"normalize"`
	// SimilarityFloor is toolsvc's own key (model2vec ignores it): the
	// cosine similarity two unrelated texts reach with this model (see
	// Model.SimilarityFloor).
	SimilarityFloor *float64 `json:"similarity_floor"`
}

// Load reads the model in dir: tokenizer.json, model.safetensors and
// (optionally) config.json. Its name, reported by Name and recorded with
// every vector it makes, is the directory's base name unless name is set.
func Load(dir, name string) (*Model, error) {
	if name == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("model2vec: %w", err)
		}
		name = filepath.Base(abs)
	}
	tokJSON, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("model2vec: %s: the model directory needs tokenizer.json: %w", dir, err)
	}
	tok, err := parseTokenizer(tokJSON)
	if err != nil {
		return nil, err
	}
	st, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("model2vec: %s: the model directory needs model.safetensors: %w", dir, err)
	}
	tensors, err := parseSafetensors(st)
	if err != nil {
		return nil, err
	}
	m := &Model{name: name, tok: tok, normalize: true}
	emb, ok := tensors["embeddings"]
	if !ok {
		return nil, errors.New(`model2vec: model.safetensors has no "embeddings" tensor`)
	}
	if len(emb.shape) != 2 || emb.shape[0] <= 0 || emb.shape[1] <= 0 {
		return nil, fmt.Errorf("model2vec: embeddings has shape %v, want [rows, dim]", emb.shape)
	}
	m.dim = emb.shape[1]
	m.rows = emb.values
	if w, ok := tensors["weights"]; ok {
		if len(w.shape) != 1 {
			return nil, fmt.Errorf("model2vec: weights has shape %v, want [vocabulary]", w.shape)
		}
		for i, v := range w.values {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v < 0 {
				return nil, fmt.Errorf("model2vec: weights[%d] = %v is not a finite, non-negative scale", i, v)
			}
		}
		if len(w.values) < tok.size() {
			return nil, fmt.Errorf("model2vec: weights has %d values for a vocabulary of %d", len(w.values), tok.size())
		}
		m.weights = w.values
	}
	nrows := emb.shape[0]
	if mp, ok := tensors["mappings"]; ok {
		m.mappings = make([]int32, len(mp.values))
		for i, v := range mp.values {
			if v < 0 || int(v) >= nrows || v != float32(int32(v)) {
				return nil, fmt.Errorf("model2vec: mappings[%d] = %v is not a row of embeddings", i, v)
			}
			m.mappings[i] = int32(v)
		}
		if len(m.mappings) < tok.size() {
			return nil, fmt.Errorf("model2vec: mappings has %d entries for a vocabulary of %d", len(m.mappings), tok.size())
		}
	} else if nrows < tok.size() {
		return nil, fmt.Errorf("model2vec: embeddings has %d rows for a vocabulary of %d", nrows, tok.size())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil {
		var c config
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("model2vec: config.json: %w", err)
		}
		if c.Normalize != nil {
			m.normalize = *c.Normalize
		}
		if f := c.SimilarityFloor; f != nil {
			if math.IsNaN(*f) || *f < 0 || *f >= 1 {
				return nil, fmt.Errorf("model2vec: config.json: similarity_floor %v is not in [0, 1)", *f)
			}
			m.floor = *f
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("model2vec: config.json: %w", err)
	}
	return m, nil
}

// Name is the model's name, recorded with the vectors it makes so that
// vectors of two models are never compared.
func (m *Model) Name() string { return m.name }

// Dim is the length of every vector.
func (m *Model) Dim() int { return m.dim }

// SimilarityFloor is the cosine similarity that two unrelated texts reach
// with this model, from its config.json (similarity_floor; 0 when absent):
// a static model's sentence vectors all lean alike, so unrelated texts
// score well above 0. Memory search rescales similarities above it to
// 0..1 (see memory.Calibrated). ConvertGloVe measures it.
func (m *Model) SimilarityFloor() float64 { return m.floor }

// Embed returns one vector per text, in order. A text with no known token
// embeds to the zero vector. It never fails but for a cancelled context.
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = m.embed(t)
	}
	return out, nil
}

func (m *Model) embed(text string) []float32 { return m.embedIDs(m.tok.encode(text)) }

// embedIDs is the (weighted) mean of the tokens' rows, normalised when the
// model says so; unknown tokens are dropped.
func (m *Model) embedIDs(ids []int) []float32 {
	v := make([]float32, m.dim)
	n := 0
	for _, id := range ids {
		if id == m.tok.unkID {
			continue // model2vec drops unknown tokens before pooling
		}
		row := id
		if m.mappings != nil {
			row = int(m.mappings[id])
		}
		w := float32(1)
		if m.weights != nil {
			w = m.weights[id]
		}
		r := m.rows[row*m.dim : (row+1)*m.dim]
		for j, x := range r {
			v[j] += w * x
		}
		n++
	}
	if n == 0 {
		return v
	}
	inv := 1 / float32(n)
	var norm float64
	for j := range v {
		v[j] *= inv
		norm += float64(v[j]) * float64(v[j])
	}
	if m.normalize && norm > 0 {
		s := float32(1 / math.Sqrt(norm))
		for j := range v {
			v[j] *= s
		}
	}
	return v
}
