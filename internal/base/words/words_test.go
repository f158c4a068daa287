package words

import (
	"hash/maphash"
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
	if n := memo.size(); n > maxCached {
		t.Errorf("memo holds %d words, bound %d", n, maxCached)
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

// allCases are texts whose words All must split as Split does: mixed
// case, non-ASCII letters and marks, separators inside and outside
// ASCII, invalid UTF-8, and a valid U+FFFD.
var allCases = []string{
	"", " ", "word", "The billing-service stores INVOICES in PostgreSQL; a x über café",
	"ÜBER Straße İstanbul ΣΊΣΥΦΟΣ naïve e\u0301tude", "tab\tnew\nline, comma.dot/slash",
	"日本語のテキスト と 中文", "emoji 🙂 between\u00a0nbsp\u2003em", "bad\xffutf8\xc3 \xe2\x82",
	"replacement\uFFFDchar", "MiXeD123 abc_def a1-b2", "\u0301leading mark", "end.",
}

func TestAllIsSplit(t *testing.T) {
	for _, text := range allCases {
		if got, want := slices.Collect(All(text)), Split(text); !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("All(%q) = %q, Split = %q", text, got, want)
		}
	}
}

func FuzzAllIsSplit(f *testing.F) {
	for _, text := range allCases {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := slices.Collect(All(text)), Split(text); !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("All(%q) = %q, Split = %q", text, got, want)
		}
	})
}

func TestAllStopsWhenAsked(t *testing.T) {
	var got []string
	for w := range All("one two three") {
		got = append(got, w)
		if w == "two" {
			break
		}
	}
	if want := []string{"one", "two"}; !slices.Equal(got, want) {
		t.Errorf("words before the break = %q, want %q", got, want)
	}
}

func BenchmarkSplitting(b *testing.B) {
	text := strings.Repeat("The billing service stores invoices in PostgreSQL every Tuesday ", 3)
	b.Run("Split", func(b *testing.B) {
		for b.Loop() {
			for range Split(text) {
			}
		}
	})
	b.Run("All", func(b *testing.B) {
		for b.Loop() {
			for range All(text) {
			}
		}
	})
}

func TestTermsAreTheContentWordsStems(t *testing.T) {
	for _, text := range []string{
		"", "the and of", "Running runs RUN; the runner ran",
		"Memories über straße memory memorise connection connected connections a b",
		"x " + strings.Repeat("y", 60) + " " + strings.Repeat("y", 60),
	} {
		var want []string
		for _, w := range Content(text) {
			if s := english.Stem(w, false); !slices.Contains(want, s) {
				want = append(want, s)
			}
		}
		got := Terms(text)
		var stems []string
		for i, term := range got {
			stems = append(stems, term.Stem)
			if i > 0 && got[i-1].Compare(term) >= 0 {
				t.Errorf("Terms(%q): %v before %v: not sorted by Compare, or repeated", text, got[i-1], term)
			}
			if term.Hash != maphash.String(seed, term.Stem) {
				t.Errorf("Terms(%q): %q has hash %x, want the stem's", text, term.Stem, term.Hash)
			}
		}
		slices.Sort(stems)
		slices.Sort(want)
		if !slices.Equal(stems, want) {
			t.Errorf("Terms(%q) stems %q, want %q", text, stems, want)
		}
	}
}

func TestTermCompareBreaksHashTiesByStem(t *testing.T) {
	a, b, a2 := Term{Hash: 7, Stem: "a"}, Term{Hash: 7, Stem: "b"}, Term{Hash: 7, Stem: "a"}
	if a.Compare(b) >= 0 || b.Compare(a) <= 0 || a.Compare(a2) != 0 {
		t.Error("terms of one hash are not ordered by stem")
	}
	if (Term{Hash: 1, Stem: "z"}).Compare(Term{Hash: 2, Stem: "a"}) >= 0 {
		t.Error("terms are not ordered by hash first")
	}
}

func TestMemoPublishesWordsLookedUpAgain(t *testing.T) {
	fresh := make([]string, 40)
	for i := range fresh {
		fresh[i] = "promotionword" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	inRead := func(w string) bool { _, ok := (*memo.read.Load())[w]; return ok }
	// Looked up again and again (as a search's candidates are), every word
	// leaves dirty for the lock-free read map.
	for range 1 + maxCached/16 {
		for _, w := range fresh {
			if got, want := Stem(w), english.Stem(w, false); got != want {
				t.Fatalf("Stem(%q) = %q, want %q", w, got, want)
			}
		}
		if !slices.ContainsFunc(fresh, func(w string) bool { return !inRead(w) }) {
			return
		}
	}
	t.Errorf("words looked up %d times each are still not in the read map", 1+maxCached/16)
}
