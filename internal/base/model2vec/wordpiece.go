package model2vec

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// wordPiece is the tokenizer of tokenizer.json when its normaliser is
// BertNormalizer and its pre-tokeniser BertPreTokenizer, and its model
// WordPiece (what model2vec's distilled models use) or WordLevel (whole
// words only, what a converted word-vector model such as GloVe uses: a
// word is its own token or the unknown token, never split into pieces).
type wordPiece struct {
	// wordLevel: the model is WordLevel (no pieces).
	wordLevel    bool
	vocab        map[string]int
	unkID        int
	prefix       string
	maxWordChars int
	lowercase    bool
	stripAccents bool
	cleanText    bool
	chineseChars bool
}

type tokenizerJSON struct {
	Normalizer *struct {
		Type         string `json:"type"`
		CleanText    *bool  `json:"clean_text"`
		ChineseChars *bool  `json:"handle_chinese_chars"`
		StripAccents *bool  `json:"strip_accents"`
		Lowercase    *bool  `json:"lowercase"`
	} `json:"normalizer"`
	PreTokenizer *struct {
		Type string `json:"type"`
	} `json:"pre_tokenizer"`
	Model struct {
		Type                    string         `json:"type"`
		UnkToken                string         `json:"unk_token"`
		ContinuingSubwordPrefix *string        `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int            `json:"max_input_chars_per_word"`
		Vocab                   map[string]int `json:"vocab"`
	} `json:"model"`
}

func parseTokenizer(b []byte) (*wordPiece, error) {
	var tj tokenizerJSON
	if err := json.Unmarshal(b, &tj); err != nil {
		return nil, fmt.Errorf("model2vec: tokenizer.json: %w", err)
	}
	if tj.Model.Type != "WordPiece" && tj.Model.Type != "WordLevel" {
		return nil, fmt.Errorf("model2vec: tokenizer.json: model type %q is not supported (WordPiece and WordLevel are)", tj.Model.Type)
	}
	if tj.Normalizer == nil || tj.Normalizer.Type != "BertNormalizer" {
		return nil, fmt.Errorf("model2vec: tokenizer.json: the normalizer must be BertNormalizer")
	}
	if tj.PreTokenizer == nil || tj.PreTokenizer.Type != "BertPreTokenizer" {
		return nil, fmt.Errorf("model2vec: tokenizer.json: the pre_tokenizer must be BertPreTokenizer")
	}
	if len(tj.Model.Vocab) == 0 {
		return nil, fmt.Errorf("model2vec: tokenizer.json: the vocabulary is empty")
	}
	unk, ok := tj.Model.Vocab[tj.Model.UnkToken]
	if !ok {
		return nil, fmt.Errorf("model2vec: tokenizer.json: unk_token %q is not in the vocabulary", tj.Model.UnkToken)
	}
	ids := make(map[int]bool, len(tj.Model.Vocab))
	for tokStr, id := range tj.Model.Vocab {
		if id < 0 || id >= len(tj.Model.Vocab) || ids[id] {
			return nil, fmt.Errorf("model2vec: tokenizer.json: token %q has id %d: ids must be 0..%d, each once", tokStr, id, len(tj.Model.Vocab)-1)
		}
		ids[id] = true
	}
	opt := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	w := &wordPiece{
		wordLevel: tj.Model.Type == "WordLevel",
		vocab:     tj.Model.Vocab, unkID: unk, prefix: "##", maxWordChars: tj.Model.MaxInputCharsPerWord,
		lowercase: opt(tj.Normalizer.Lowercase, true), cleanText: opt(tj.Normalizer.CleanText, true),
		chineseChars: opt(tj.Normalizer.ChineseChars, true),
	}
	// strip_accents null follows lowercase, as in the BERT normaliser.
	w.stripAccents = opt(tj.Normalizer.StripAccents, w.lowercase)
	if tj.Model.ContinuingSubwordPrefix != nil {
		w.prefix = *tj.Model.ContinuingSubwordPrefix
	}
	if w.maxWordChars <= 0 {
		w.maxWordChars = 100
	}
	return w, nil
}

func (w *wordPiece) size() int { return len(w.vocab) }

// encode returns the token ids of text, without special tokens.
func (w *wordPiece) encode(text string) []int {
	var ids []int
	for _, word := range w.preTokenize(w.normalize(text)) {
		ids = w.appendWord(ids, word)
	}
	return ids
}

func (w *wordPiece) normalize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case w.cleanText && (r == 0 || r == 0xfffd || (unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r')):
			continue
		case w.cleanText && unicode.IsSpace(r):
			b.WriteByte(' ')
		case w.chineseChars && isCJK(r):
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	s = b.String()
	if w.stripAccents {
		var sb strings.Builder
		for _, r := range norm.NFD.String(s) {
			if !unicode.Is(unicode.Mn, r) {
				sb.WriteRune(r)
			}
		}
		s = sb.String()
	}
	if w.lowercase {
		s = strings.ToLower(s)
	}
	return s
}

// preTokenize splits on whitespace and makes every punctuation character a
// word of its own.
func (w *wordPiece) preTokenize(s string) []string {
	var words []string
	start := -1
	for i, r := range s {
		switch {
		case unicode.IsSpace(r):
			if start >= 0 {
				words = append(words, s[start:i])
				start = -1
			}
		case isPunct(r):
			if start >= 0 {
				words = append(words, s[start:i])
				start = -1
			}
			words = append(words, string(r))
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		words = append(words, s[start:])
	}
	return words
}

// appendWord appends the greedy longest-match-first pieces of word, or the
// unknown token when any part of it has no piece; for a WordLevel model,
// the word's own token or the unknown token.
func (w *wordPiece) appendWord(ids []int, word string) []int {
	if w.wordLevel {
		if id, ok := w.vocab[word]; ok {
			return append(ids, id)
		}
		return append(ids, w.unkID)
	}
	runes := []rune(word)
	if len(runes) > w.maxWordChars {
		return append(ids, w.unkID)
	}
	var pieces []int
	for start := 0; start < len(runes); {
		end, found := len(runes), -1
		for ; end > start; end-- {
			sub := string(runes[start:end])
			if start > 0 {
				sub = w.prefix + sub
			}
			if id, ok := w.vocab[sub]; ok {
				found = id
				break
			}
		}
		if found < 0 {
			return append(ids, w.unkID)
		}
		pieces = append(pieces, found)
		start = end
	}
	return append(ids, pieces...)
}

// isPunct is BERT's punctuation: the ASCII symbol ranges and Unicode P*.
func isPunct(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return unicode.IsPunct(r)
}

// isCJK is BERT's CJK ideograph test.
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}
