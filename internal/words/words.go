// Package words is toolsvc's one text analysis: how text splits into
// words, which words are stop words, and their Snowball stems. Memory
// ranking and both stores' full-text search use it, so the ranking and
// the engines agree on what a word is and which words carry content.
package words

import (
	"iter"
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

// All yields text's words, lower-cased, in order: the words of Split,
// without the slice. A word of lower-case ASCII, the common case, is a
// substring of text (no copy), and separators in ASCII are found by table
// rather than by the Unicode tables: ranking splits every candidate
// memory of a search, up to a thousand of them, this way.
func All(text string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := 0; i < len(text); {
			if n := separatorLen(text[i:]); n > 0 {
				i += n
				continue
			}
			start, lower := i, true
			for i < len(text) {
				if c := text[i]; c < utf8.RuneSelf {
					if asciiSeparator[c] {
						break
					}
					lower = lower && !('A' <= c && c <= 'Z')
					i++
					continue
				}
				r, n := utf8.DecodeRuneInString(text[i:])
				if IsSeparator(r) {
					break
				}
				lower = false
				i += n
			}
			w := text[start:i]
			if !lower {
				w = strings.ToLower(w)
			}
			if !yield(w) {
				return
			}
		}
	}
}

// separatorLen is the length in bytes of the separator text starts with,
// 0 if it starts with a word character.
func separatorLen(text string) int {
	if c := text[0]; c < utf8.RuneSelf {
		if asciiSeparator[c] {
			return 1
		}
		return 0
	}
	if r, n := utf8.DecodeRuneInString(text); IsSeparator(r) {
		return n
	}
	return 0
}

// asciiSeparator is IsSeparator of each ASCII character.
var asciiSeparator = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = IsSeparator(rune(c))
	}
	return t
}()

// IsStop reports whether a lower-cased word is an English stop word.
// The list is PostgreSQL's English one: PostgreSQL never indexes these
// words, so SQLite must not search them and ranking must not count them,
// for every backend to match and score the same rows.
func IsStop(w string) bool { return stopWords[w] }

// Content returns text's content words: lower-cased, stop words and
// one-letter words dropped, in order, repeats kept.
func Content(text string) []string {
	var out []string
	for w := range All(text) {
		if IsContent(w) {
			out = append(out, w)
		}
	}
	return out
}

// IsContent reports whether a word of All is a content word (see Content).
func IsContent(w string) bool {
	return utf8.RuneCountInString(w) >= 2 && !stopWords[w]
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
