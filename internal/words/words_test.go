package words

import (
	"slices"
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
					if got, want := Stem(w), english.Stem(w, false); got != want {
						t.Errorf("Stem(%q) = %q, want %q", w, got, want)
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestCacheIsBounded(t *testing.T) {
	for i := range maxCached + 10 {
		Stem("w" + strings.Repeat("x", i%40) + string(rune('a'+i%26)) + string(rune('a'+(i/26)%26)) + string(rune('a'+(i/676)%26)) + string(rune('a'+(i/17576)%26)))
	}
	cache.RLock()
	n := len(cache.m)
	cache.RUnlock()
	if n > maxCached {
		t.Errorf("cache holds %d words, bound %d", n, maxCached)
	}
}

func TestContentDropsStopAndOneLetterWords(t *testing.T) {
	got := Content("The billing-service stores INVOICES in PostgreSQL; a x über café")
	want := []string{"billing", "service", "stores", "invoices", "postgresql", "über", "café"}
	if !slices.Equal(got, want) {
		t.Fatalf("Content = %q, want %q", got, want)
	}
}

func TestSplitRemovesEveryFullTextOperator(t *testing.T) {
	for _, w := range Split(`"quoted" pre* a:b a&b a|b !not (group) back\slash NEAR/3`) {
		if strings.ContainsAny(w, `"*:&|!()\/`) {
			t.Errorf("word %q keeps an operator character", w)
		}
	}
}

func TestIsStopIsPostgreSQLsEnglishList(t *testing.T) {
	for _, w := range []string{"the", "and", "of", "don", "should"} {
		if !IsStop(w) {
			t.Errorf("IsStop(%q) = false", w)
		}
	}
	// The same list as the Snowball stemmer's, whose stems the words are.
	for w := range stopWords {
		if !english.IsStopWord(w) {
			t.Errorf("%q is a stop word here but not in Snowball's list", w)
		}
	}
	for _, w := range []string{"would", "could", "memory"} {
		if IsStop(w) {
			t.Errorf("IsStop(%q) = true", w)
		}
	}
}
