package model2vec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// Spec is a model to write with Write: a WordPiece vocabulary (Tokens[i]
// has id i; continuation pieces start with "##"; "[UNK]" must be one of
// them), or a WordLevel one (whole words), and one row of Dim values per
// token.
type Spec struct {
	Tokens []string
	Rows   [][]float32
	// WordLevel writes a WordLevel tokenizer (whole words) instead of
	// WordPiece.
	WordLevel bool
	// KeepAccents keeps accents (the normaliser still lower-cases); by
	// default they are stripped, as BERT's uncased models do.
	KeepAccents bool
	// Weights, when set, is written as the "weights" tensor: one scale per
	// token.
	Weights []float32
	// F16 stores the table as half precision, as some published models do.
	F16 bool
	// Normalize is written to config.json.
	Normalize bool
	// SimilarityFloor, when above 0, is written to config.json (see
	// Model.SimilarityFloor).
	SimilarityFloor float64
}

// Write writes spec into dir in the model2vec format (tokenizer.json,
// model.safetensors, config.json), so that tests and tools can make a
// small real model that Load reads through the same code as a published
// one.
func Write(dir string, spec Spec) error {
	if len(spec.Tokens) == 0 || len(spec.Rows) != len(spec.Tokens) {
		return fmt.Errorf("model2vec: %d tokens and %d rows", len(spec.Tokens), len(spec.Rows))
	}
	dim := len(spec.Rows[0])
	vocab := map[string]int{}
	for i, t := range spec.Tokens {
		vocab[t] = i
		if len(spec.Rows[i]) != dim {
			return fmt.Errorf("model2vec: row %d has %d values, want %d", i, len(spec.Rows[i]), dim)
		}
	}
	if spec.Weights != nil && len(spec.Weights) != len(spec.Tokens) {
		return fmt.Errorf("model2vec: %d weights for %d tokens", len(spec.Weights), len(spec.Tokens))
	}
	var stripAccents any // null: follow lowercase
	if spec.KeepAccents {
		stripAccents = false
	}
	model := map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab}
	if spec.WordLevel {
		model = map[string]any{"type": "WordLevel", "unk_token": "[UNK]", "vocab": vocab}
	}
	tok := map[string]any{
		"version":       "1.0",
		"normalizer":    map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": stripAccents, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"model":         model,
	}
	tb, err := json.Marshal(tok)
	if err != nil {
		return err
	}
	dtype, size := "F32", 4
	if spec.F16 {
		dtype, size = "F16", 2
	}
	data := make([]byte, 0, len(spec.Rows)*dim*size+len(spec.Weights)*4)
	for _, r := range spec.Rows {
		for _, v := range r {
			if spec.F16 {
				data = binary.LittleEndian.AppendUint16(data, floatToHalf(v))
			} else {
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
			}
		}
	}
	tensors := map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"embeddings":   map[string]any{"dtype": dtype, "shape": []int{len(spec.Rows), dim}, "data_offsets": []int{0, len(data)}},
	}
	if spec.Weights != nil {
		start := len(data)
		for _, w := range spec.Weights {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(w))
		}
		tensors["weights"] = map[string]any{"dtype": "F32", "shape": []int{len(spec.Weights)}, "data_offsets": []int{start, len(data)}}
	}
	header, err := json.Marshal(tensors)
	if err != nil {
		return err
	}
	st := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	st = append(append(st, header...), data...)
	cfgMap := map[string]any{"model_type": "model2vec", "normalize": spec.Normalize, "hidden_dim": dim}
	if spec.SimilarityFloor > 0 {
		cfgMap["similarity_floor"] = spec.SimilarityFloor
	}
	cfg, err := json.Marshal(cfgMap)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"tokenizer.json": tb, "model.safetensors": st, "config.json": cfg} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// floatToHalf narrows to IEEE 754 half precision, rounding to nearest even
// for normal values (enough for test tables).
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	frac := b & 0x7fffff
	switch {
	case exp <= 0:
		return sign // flush tiny values to zero
	case exp >= 0x1f:
		return sign | 0x7c00
	}
	h := uint32(exp)<<10 | frac>>13
	if rem := frac & 0x1fff; rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}
