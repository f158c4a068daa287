// Package stem reduces English words to their Snowball stems, memoised:
// ranking stems every word of every candidate on every search, and a
// vocabulary repeats.
package stem

import (
	"strings"
	"sync"

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

// Of returns the Snowball English stem of a lower-cased word.
func Of(w string) string {
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
