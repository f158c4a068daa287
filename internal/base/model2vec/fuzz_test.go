package model2vec

import (
	"encoding/binary"
	"testing"
	"unicode/utf8"
)

// FuzzParseSafetensors: any file either decodes into tensors whose values
// fit their shapes or is refused with an error; it never panics.
func FuzzParseSafetensors(f *testing.F) {
	header := `{"embeddings":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}`
	good := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	good = append(append(good, header...), make([]byte, 16)...)
	f.Add(good)
	f.Add([]byte("\x02\x00\x00\x00\x00\x00\x00\x00{}"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		tensors, err := parseSafetensors(b)
		if err != nil {
			return
		}
		for name, tn := range tensors {
			n := 1
			for _, d := range tn.shape {
				n *= d
			}
			if n != len(tn.values) {
				t.Fatalf("%s: shape %v holds %d values, decoded %d", name, tn.shape, n, len(tn.values))
			}
		}
	})
}

// FuzzEncode: any text tokenises to ids of the vocabulary.
func FuzzEncode(f *testing.F) {
	w, err := parseTokenizer([]byte(`{"normalizer":{"type":"BertNormalizer"},"pre_tokenizer":{"type":"BertPreTokenizer"},` +
		`"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0,"deploy":1,"##s":2,"a":3,"##b":4}}}`))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"Deploys ab, a", "Café ☕ 中文", "\x00\ufffd", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		for _, id := range w.encode(s) {
			if id < 0 || id >= w.size() {
				t.Fatalf("encode(%q) gave id %d outside the vocabulary", s, id)
			}
		}
	})
}
