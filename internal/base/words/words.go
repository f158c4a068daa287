// Package words is toolsvc's one text analysis: how text splits into
// words, which words are stop words, and their Snowball stems. Memory
// ranking and both stores' full-text search use it, so the ranking and
// the engines agree on what a word is and which words carry content.
package words

import (
	"hash/maphash"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
func Stem(w string) string { return lookup(w).term.Stem }

// A Term is a word's stem with a hash of it. A set of terms sorted by
// Compare is sorted and merged mostly by comparing the hashes: sorting
// each candidate's stems as strings was a third of what splitting and
// stemming it cost.
type Term struct {
	Hash uint64
	Stem string
}

// Compare orders terms by hash, then stem: a total order in which equal
// stems are equal terms (the hash only decides first).
func (t Term) Compare(u Term) int {
	switch {
	case t.Hash < u.Hash:
		return -1
	case t.Hash > u.Hash:
		return 1
	}
	return strings.Compare(t.Stem, u.Stem)
}

// ContentTerm returns the term of a word of All and whether the word is a
// content word (IsContent), from one lookup of the memo.
func ContentTerm(w string) (Term, bool) {
	e := lookup(w)
	return e.term, e.content
}

// Terms returns the distinct terms of text's content words, sorted by
// Term.Compare.
func Terms(text string) []Term {
	set := make([]Term, 0, 24)
	for w := range All(text) {
		if t, ok := ContentTerm(w); ok {
			set = append(set, t)
		}
	}
	// Insertion sort: a memory's few dozen terms, compared by hash
	// without a call.
	for i := 1; i < len(set); i++ {
		t := set[i]
		j := i
		for ; j > 0 && (set[j-1].Hash > t.Hash || set[j-1].Hash == t.Hash && set[j-1].Stem > t.Stem); j-- {
			set[j] = set[j-1]
		}
		set[j] = t
	}
	return slices.CompactFunc(set, func(a, b Term) bool { return a.Hash == b.Hash && a.Stem == b.Stem })
}

// entry is what the memo knows of a word.
type entry struct {
	term    Term
	content bool
}

// seed hashes terms; a term's hash is compared within the process only.
var seed = maphash.MakeSeed()

func analyse(w string) entry {
	s := english.Stem(w, false)
	return entry{term: Term{Hash: maphash.String(seed, s), Stem: s}, content: IsContent(w)}
}

// lookup returns w's entry, from the memo when it holds w.
func lookup(w string) entry {
	if len(w) > maxWord {
		return analyse(w)
	}
	if e, ok := (*memo.read.Load())[w]; ok {
		return e
	}
	return memo.slow(w)
}

// memo holds the analysed words. Its read map is never written once
// published, so the many lookups of a search (two goroutines stem a
// search's candidates) read it without a lock or an atomic write: the
// read-locked map it replaces made both goroutines write the lock's
// reader count for every word, and stemming on two cores took as long as
// on one. A word not in it is analysed and added, under mu, to dirty; once
// the lookups that found their word in dirty outnumber dirty's words and a
// sixteenth of read's, read and dirty are published as the new read map
// (as sync.Map promotes its dirty map, with typed keys and no
// allocation per lookup).
var memo = func() *memoTable {
	m := &memoTable{dirty: map[string]entry{}}
	m.read.Store(&map[string]entry{})
	return m
}()

type memoTable struct {
	read atomic.Pointer[map[string]entry]

	mu     sync.Mutex
	dirty  map[string]entry
	misses int
}

func (m *memoTable) slow(w string) entry {
	if e, ok := m.held(w); ok {
		return e
	}
	// A new word is analysed outside the lock: goroutines that meet new
	// words at once stem them at once.
	e := analyse(w)
	m.mu.Lock()
	defer m.mu.Unlock()
	read := *m.read.Load()
	if _, ok := read[w]; ok {
		return e
	}
	if _, ok := m.dirty[w]; ok {
		return e
	}
	if len(read)+len(m.dirty) >= maxCached {
		m.read.Store(&map[string]entry{})
		m.dirty, m.misses = map[string]entry{}, 0
	}
	m.dirty[strings.Clone(w)] = e
	return e
}

// held returns w's entry if the memo holds it, counting a lookup found in
// dirty and publishing dirty when such lookups are many enough.
func (m *memoTable) held(w string) (entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	read := *m.read.Load()
	if e, ok := read[w]; ok {
		return e, true
	}
	e, ok := m.dirty[w]
	if !ok {
		return entry{}, false
	}
	if m.misses++; m.misses >= len(m.dirty) && m.misses >= len(read)/16 {
		next := make(map[string]entry, len(read)+len(m.dirty))
		maps.Copy(next, read)
		maps.Copy(next, m.dirty)
		m.read.Store(&next)
		m.dirty, m.misses = map[string]entry{}, 0
	}
	return e, true
}

// size is the number of words memoised.
func (m *memoTable) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(*m.read.Load()) + len(m.dirty)
}
