package stem

import (
	"strings"
	"sync"
	"testing"

	"github.com/kljensen/snowball/english"
)

func TestOfMatchesTheStemmer(t *testing.T) {
	words := []string{"running", "runs", "memories", "memory", "connection", "connected", "a", "", strings.Repeat("z", 60)}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 3 {
				for _, w := range words {
					if got, want := Of(w), english.Stem(w, false); got != want {
						t.Errorf("Of(%q) = %q, want %q", w, got, want)
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestCacheIsBounded(t *testing.T) {
	for i := range maxCached + 10 {
		Of("w" + strings.Repeat("x", i%40) + string(rune('a'+i%26)) + string(rune('a'+(i/26)%26)) + string(rune('a'+(i/676)%26)) + string(rune('a'+(i/17576)%26)))
	}
	cache.RLock()
	n := len(cache.m)
	cache.RUnlock()
	if n > maxCached {
		t.Errorf("cache holds %d words, bound %d", n, maxCached)
	}
}
