package sqlite_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
)

// TestWindowRelevanceIsBM25OfTheWindow checks the relevance of every row
// of a full-text window against backend.BM25 over the window's contents,
// for windows below one batch of the ranking goroutine, of several
// batches, and past store.MatchedCap (where the row beyond the cap must
// not count). CandidateLimit 1,000 returns the whole window.
func TestWindowRelevanceIsBM25OfTheWindow(t *testing.T) {
	for _, n := range []int{40, 300, store.MatchedCap + 25} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := openTemp(t).(store.MemoryBulkAdder)
			batch := make([]*store.Memory, n)
			for i := range batch {
				words := []string{"alpha"}
				for range i % 4 {
					words = append(words, "gamma")
				}
				for range i % 7 {
					words = append(words, fmt.Sprint("filler", i%11))
				}
				batch[i] = &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: strings.Join(words, " ")}
			}
			if err := s.AddMemories(t.Context(), batch); err != nil {
				t.Fatal(err)
			}
			terms := []string{"alpha", "gamma"}
			res, err := s.(store.Store).SearchMemories(t.Context(), store.SearchQuery{Tenant: "t1", Terms: terms,
				Scopes: []store.Scope{{Layer: store.LayerUser, ScopeID: "u1"}}, CandidateLimit: store.MaxCandidateLimit, Light: true})
			if err != nil {
				t.Fatal(err)
			}
			if want := min(n, store.MatchedCap); res.Matched != want || len(res.Candidates) != want || res.Capped != (n > store.MatchedCap) {
				t.Fatalf("matched %d, %d candidates, capped %v; want %d, capped %v", res.Matched, len(res.Candidates), res.Capped,
					want, n > store.MatchedCap)
			}
			contents := make([]string, len(res.Candidates))
			for i, c := range res.Candidates {
				contents[i] = c.Memory.Content
			}
			want := backend.BM25(backend.Tokens(terms), contents)
			for i, c := range res.Candidates {
				if c.Relevance != want[i] {
					t.Fatalf("candidate %d (%q): relevance %v, BM25 of the window %v", i, c.Memory.Content, c.Relevance, want[i])
				}
			}
		})
	}
}

// TestScopeTokenInContentDoesNotWidenTheScope stores, outside the
// caller's scope (another user, another tenant), memories whose content
// holds the caller's scope token: the full-text query does not restrict
// the scope tokens to their column, so only the join's exact check keeps
// them out.
func TestScopeTokenInContentDoesNotWidenTheScope(t *testing.T) {
	s := openTemp(t)
	mine := store.Scope{Layer: store.LayerUser, ScopeID: "u1"}
	token := sqlite.ScopeKey("t1", mine)
	in := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: "kafka retention notes"}
	for _, m := range []*store.Memory{
		in,
		{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u2", Content: "kafka " + token},
		{Tenant: "t1", Layer: store.LayerProject, ScopeID: "u1", Content: "kafka " + token},
		{Tenant: "t2", Layer: store.LayerUser, ScopeID: "u1", Content: "kafka " + token},
	} {
		if err := s.AddMemory(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.SearchMemories(t.Context(), store.SearchQuery{Tenant: "t1", Terms: []string{"kafka"}, Scopes: []store.Scope{mine}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Matched != 1 || len(res.Candidates) != 1 || res.Candidates[0].Memory.ID != in.ID {
		t.Fatalf("matched %d, candidates %+v; want only %q", res.Matched, res.Candidates, in.Content)
	}
}
