package sqlite_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/words"
	"github.com/toolsvc/toolsvc/internal/store"
)

// jaccardOf is the Jaccard similarity of two texts' term sets, as
// add-memory computes it, on maps.
func jaccardOf(a, b string) float64 {
	sa, sb := map[string]bool{}, map[string]bool{}
	for _, t := range words.Terms(a) {
		sa[t.Stem] = true
	}
	for _, t := range words.Terms(b) {
		sb[t.Stem] = true
	}
	inter := 0
	for s := range sa {
		if sb[s] {
			inter++
		}
	}
	if len(sa)+len(sb) == 0 {
		return 1
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

// TestNearDuplicateCandidatesFindEveryNearDuplicate stores sets of words
// that are copies of a few bases with words dropped, added or replaced, in
// two scopes and an orphan-free tenant beside, and checks that the
// candidates of each text hold every memory of its scope whose Jaccard
// similarity reaches store.NearDuplicateJaccard, and nothing of another
// scope or tenant.
func TestNearDuplicateCandidatesFindEveryNearDuplicate(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "store.db"))
	ctx := t.Context()
	r := rand.New(rand.NewPCG(5, 5))
	word := func() string { return fmt.Sprintf("w%dq", r.IntN(400)) }
	var bases [][]string
	for range 12 {
		n := 3 + r.IntN(40)
		b := make([]string, n)
		for i := range b {
			b[i] = word()
		}
		bases = append(bases, b)
	}
	vary := func(b []string) string {
		out := slices.Clone(b)
		for range r.IntN(3) {
			switch r.IntN(3) {
			case 0:
				if len(out) > 1 {
					i := r.IntN(len(out))
					out = slices.Delete(out, i, i+1)
				}
			case 1:
				out = append(out, word())
			default:
				out[r.IntN(len(out))] = word()
			}
		}
		return strings.Join(out, " ")
	}
	scopes := []store.Scope{{Layer: store.LayerUser, ScopeID: "u1"}, {Layer: store.LayerUser, ScopeID: "u2"}}
	type stored struct {
		tenant  string
		sc      store.Scope
		id      string
		content string
	}
	var all []stored
	for i := range 600 {
		tenant := "t1"
		if i%7 == 0 {
			tenant = "t2"
		}
		sc := scopes[r.IntN(len(scopes))]
		m := &store.Memory{Tenant: tenant, Layer: sc.Layer, ScopeID: sc.ScopeID, Content: vary(bases[r.IntN(len(bases))]), SourceType: store.SourceManual}
		if err := s.AddMemory(ctx, m); err != nil {
			t.Fatal(err)
		}
		all = append(all, stored{tenant, sc, m.ID, m.Content})
	}
	near := 0
	for q := range 200 {
		content := vary(bases[q%len(bases)])
		sc := scopes[q%len(scopes)]
		got, err := s.NearDuplicateCandidates(ctx, "t1", sc, content)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, m := range got {
			ids[m.ID] = true
		}
		for _, m := range all {
			in := m.tenant == "t1" && m.sc == sc
			if !in && ids[m.id] {
				t.Fatalf("candidate %s of another scope or tenant", m.id)
			}
			if in && jaccardOf(content, m.content) >= store.NearDuplicateJaccard {
				near++
				if !ids[m.id] {
					t.Fatalf("%q: near-duplicate %s %q (Jaccard %.3f) is no candidate", content, m.id, m.content, jaccardOf(content, m.content))
				}
			}
		}
	}
	if near < 100 {
		t.Fatalf("only %d near-duplicate pairs: the test does not exercise the prefixes", near)
	}
	if got, err := s.NearDuplicateCandidates(ctx, "t1", scopes[0], "a the of"); err != nil || len(got) != 0 {
		t.Errorf("candidates of a text without content words = %v, %v; want none", got, err)
	}
	if _, err := s.NearDuplicateCandidates(ctx, "", scopes[0], "text"); err == nil {
		t.Error("no tenant: want an error")
	}
}

// TestNearDuplicateKeys checks the number of keys against the Jaccard
// bound they come from (a set of n terms has n - ceil(9n/10) + 1 prefix
// keys from MinNearSize terms on, one signature below), and that sets
// below MinNearSize share their key only when equal.
func TestNearDuplicateKeys(t *testing.T) {
	if store.MinNearSize != 9 {
		t.Fatalf("MinNearSize = %d, want 9", store.MinNearSize)
	}
	for n, want := range map[int]int{0: 0, 1: 1, 8: 1, 9: 1, 10: 2, 11: 2, 16: 2, 19: 2, 20: 3, 21: 3, 100: 11} {
		set := words.Terms(wordsOf(n))
		if len(set) != n {
			t.Fatalf("%d words gave %d terms", n, len(set))
		}
		if got := len(store.NearDuplicateKeys(set)); got != want {
			t.Errorf("keys of %d terms = %d, want %d", n, got, want)
		}
	}
	a, b := store.NearDuplicateKeys(words.Terms("alpha beta gamma")), store.NearDuplicateKeys(words.Terms("gamma alpha beta beta"))
	c := store.NearDuplicateKeys(words.Terms("alpha beta delta"))
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Errorf("signatures: equal sets %v and %v, different set %v", a, b, c)
	}
}

func wordsOf(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("w%dq", i)
	}
	return strings.Join(ws, " ")
}
