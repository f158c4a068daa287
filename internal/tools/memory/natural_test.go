package memory_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/words"
)

// The natural retrieval set (testdata/retrieval-natural, see its README):
// hand-written memories and paraphrased questions, hand-written questions
// that no memory answers, and generated distractors.
var naturalDir = filepath.Join("..", "..", "..", "testdata", "retrieval-natural")

type naturalSet struct {
	memories     []struct{ ID, Content string }
	pairs        []struct{ Query, Expected string }
	unanswerable []struct{ Query string }
}

func loadNaturalSet(tb testing.TB) naturalSet {
	tb.Helper()
	var ns naturalSet
	readJSONLIn(tb, naturalDir, "memories.jsonl", &ns.memories)
	readJSONLIn(tb, naturalDir, "pairs.jsonl", &ns.pairs)
	readJSONLIn(tb, naturalDir, "unanswerable.jsonl", &ns.unanswerable)
	return ns
}

// contentStems is the set of stems of text's content words, as ranking
// and both stores' full-text engines see them.
func contentStems(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range words.Content(text) {
		out[words.Stem(w)] = true
	}
	return out
}

// TestNaturalSet checks the set's promises: its size (at least 300 pairs
// over at least 3,000 memories, at least 50 unanswerable questions), that
// no question shares a content word (after stemming) with its memory,
// that the JSONL files are fresh from the hand-written sources
// (generate.py), and that ids and contents are unique.
func TestNaturalSet(t *testing.T) {
	ns := loadNaturalSet(t)
	if len(ns.pairs) < 300 || len(ns.memories) < 3000 || len(ns.unanswerable) < 50 {
		t.Fatalf("%d pairs over %d memories, %d unanswerable; want at least 300 over 3,000, and 50",
			len(ns.pairs), len(ns.memories), len(ns.unanswerable))
	}
	content := map[string]string{}
	seen := map[string]bool{}
	for _, m := range ns.memories {
		if _, dup := content[m.ID]; dup || seen[m.Content] {
			t.Errorf("memory %s %q is not unique", m.ID, m.Content)
		}
		content[m.ID], seen[m.Content] = m.Content, true
	}
	for _, p := range ns.pairs {
		c, ok := content[p.Expected]
		if !ok {
			t.Errorf("%q expects memory %s, which is not in the set", p.Query, p.Expected)
			continue
		}
		m := contentStems(c)
		for s := range contentStems(p.Query) {
			if m[s] {
				t.Errorf("%q shares %q with %q", p.Query, s, c)
			}
		}
	}

	// The JSONL files are what generate.py makes of pairs/*.txt and
	// unanswerable.txt.
	files, err := filepath.Glob(filepath.Join(naturalDir, "pairs", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("pairs/*.txt: %v", err)
	}
	var srcPairs []string
	srcMemories := 0
	for _, path := range files {
		base := strings.TrimSuffix(filepath.Base(path), ".txt")
		last := ""
		forEachLine(t, path, func(n int, line string) {
			switch {
			case strings.HasPrefix(line, "M: "):
				last = fmt.Sprintf("%s-%d", base, n)
				srcMemories++
				if content[last] != line[3:] {
					t.Errorf("%s:%d: memory %q is not in memories.jsonl as %s (run generate.py)", path, n, line[3:], last)
				}
			case strings.HasPrefix(line, "Q: "):
				srcPairs = append(srcPairs, line[3:]+"\x00"+last)
				last = ""
			}
		})
	}
	var gotPairs []string
	for _, p := range ns.pairs {
		gotPairs = append(gotPairs, p.Query+"\x00"+p.Expected)
	}
	if !slices.Equal(srcPairs, gotPairs) {
		t.Errorf("pairs.jsonl (%d) is not fresh from pairs/*.txt (%d): run generate.py", len(gotPairs), len(srcPairs))
	}
	var srcUnanswerable, gotUnanswerable []string
	forEachLine(t, filepath.Join(naturalDir, "unanswerable.txt"), func(_ int, line string) {
		if strings.HasPrefix(line, "Q: ") {
			srcUnanswerable = append(srcUnanswerable, line[3:])
		}
	})
	for _, u := range ns.unanswerable {
		gotUnanswerable = append(gotUnanswerable, u.Query)
	}
	if !slices.Equal(srcUnanswerable, gotUnanswerable) {
		t.Errorf("unanswerable.jsonl is not fresh from unanswerable.txt: run generate.py")
	}
	if gen := len(ns.memories) - srcMemories; gen < 2000 {
		t.Errorf("%d generated distractors, want thousands", gen)
	}
}

func forEachLine(tb testing.TB, path string, fn func(n int, line string)) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fn(n, strings.TrimSpace(sc.Text()))
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
}
