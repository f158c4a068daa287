// Package words is toolsvc's one text analysis: how text splits into
// words, which words are stop words, and their Snowball stems. Memory
// ranking and both stores' full-text search use it, so the ranking and
// the engines agree on what a word is and which words carry content.
package words

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

const (
	// maxCached bounds the memo; it is dropped whole when it fills.
	maxCached = 1 << 16
	// maxWord is the longest word memoised; longer ones are stemmed
	// each time (no natural word reaches it).
	maxWord = 48
)

var cache = struct {
	sync.RWMutex
	m map[string]string
}{m: make(map[string]string, 1024)}

// IsSeparator reports whether r separates words: anything that is not a
// letter, a mark or a digit. This mirrors both engines' tokenizers (SQLite
// FTS5's unicode61, PostgreSQL's default parser) and removes every
// full-text operator character.
func IsSeparator(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
}

// Split returns text's words, lower-cased, in order.
func Split(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), IsSeparator)
}

// IsStop reports whether a lower-cased word is an English stop word.
// The list is PostgreSQL's English one: PostgreSQL never indexes these
// words, so SQLite must not search them and ranking must not count them,
// for every backend to match and score the same rows.
func IsStop(w string) bool { return stopWords[w] }

// Content returns text's content words: lower-cased, stop words and
// one-letter words dropped, in order, repeats kept.
func Content(text string) []string {
	all := Split(text)
	out := all[:0]
	for _, w := range all {
		if utf8.RuneCountInString(w) < 2 || stopWords[w] {
			continue
		}
		out = append(out, w)
	}
	return out
}

var stopWords = func() map[string]bool {
	const list = "i me my myself we our ours ourselves you your yours yourself yourselves he him his himself " +
		"she her hers herself it its itself they them their theirs themselves what which who whom this that " +
		"these those am is are was were be been being have has had having do does did doing a an the and but " +
		"if or because as until while of at by for with about against between into through during before " +
		"after above below to from up down in out on off over under again further then once here there when " +
		"where why how all any both each few more most other some such no nor not only own same so than too " +
		"very s t can will just don should now"
	m := map[string]bool{}
	for _, w := range strings.Fields(list) {
		m[w] = true
	}
	return m
}()

// Stem returns the Snowball English stem of a lower-cased word, memoised:
// ranking stems every word of every candidate on every search, and a
// vocabulary repeats.
func Stem(w string) string {
	if len(w) > maxWord {
		return english.Stem(w, false)
	}
	cache.RLock()
	s, ok := cache.m[w]
	cache.RUnlock()
	if ok {
		return s
	}
	s = english.Stem(w, false)
	cache.Lock()
	if len(cache.m) >= maxCached {
		clear(cache.m)
	}
	cache.m[strings.Clone(w)] = s
	cache.Unlock()
	return s
}
