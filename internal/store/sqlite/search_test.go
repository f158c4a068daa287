package sqlite_test

import (
	"fmt"
	"path/filepath"
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
// holds the caller's scope key, and the caller's whole scoped term of a
// search word: every word is indexed under its own memory's scope key, so
// neither enters the caller's walk (and the join's exact check would
// drop it if it did).
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
		{Tenant: "t2", Layer: store.LayerUser, ScopeID: "u9", Content: token + "xkafka " + token + "x"},
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

// TestScopedTermsFollowWrites checks the full-text index against the
// memories (checkTerms) after each kind of write: adds one by one and in
// bulk, a pointer moved to another scope with new content, an orphaning,
// and deletes. Then the moved pointer is found in its new scope by a word
// of its new content, and not in its old one.
func TestScopedTermsFollowWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "terms.db")
	s := openAt(t, path)
	db := rawDB(t, path)
	ctx := t.Context()
	u1 := store.Scope{Layer: store.LayerUser, ScopeID: "u1"}
	p1 := store.Scope{Layer: store.LayerProject, ScopeID: "p1"}
	one := &store.Memory{Tenant: "t1", Layer: u1.Layer, ScopeID: u1.ScopeID, Content: "Running the Kafka brokers; runs nightly"}
	if err := s.AddMemory(ctx, one); err != nil {
		t.Fatal(err)
	}
	if err := s.AddMemories(ctx, []*store.Memory{
		{Tenant: "t1", Layer: u1.Layer, ScopeID: u1.ScopeID, Content: "Café déjà vu, naïve 項目 notes"},
		{Tenant: "t2", Layer: u1.Layer, ScopeID: u1.ScopeID, Content: "kafka in another tenant"},
	}); err != nil {
		t.Fatal(err)
	}
	checkTerms(t, db)

	ptr := &store.Memory{Tenant: "t1", Layer: u1.Layer, ScopeID: u1.ScopeID, Content: "pointer to the billing ADR",
		SourceType: store.SourceKnowledgeSync, KnowledgeItemID: "adr-1"}
	if _, err := s.UpsertPointer(ctx, ptr); err != nil {
		t.Fatal(err)
	}
	moved := *ptr
	moved.ID, moved.Layer, moved.ScopeID, moved.Content = "", p1.Layer, p1.ScopeID, "pointer to the invoicing ADR"
	if _, err := s.UpsertPointer(ctx, &moved); err != nil {
		t.Fatal(err)
	}
	checkTerms(t, db)
	for _, c := range []struct {
		scope store.Scope
		term  string
		want  int
	}{{p1, "invoicing", 1}, {u1, "invoicing", 0}, {u1, "billing", 0}, {p1, "billing", 0}, {u1, "run", 1}} {
		res, err := s.SearchMemories(ctx, store.SearchQuery{Tenant: "t1", Terms: []string{c.term}, Scopes: []store.Scope{c.scope}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Matched != c.want {
			t.Errorf("%q in %v: %d matches, want %d", c.term, c.scope, res.Matched, c.want)
		}
	}

	if _, err := s.MarkOrphaned(ctx, "t1", []string{"adr-1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMemory(ctx, "t1", one.ID); err != nil {
		t.Fatal(err)
	}
	checkTerms(t, db)
}
