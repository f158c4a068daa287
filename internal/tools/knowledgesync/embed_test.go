package knowledgesync_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/knowledgesync"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
)

// synonymEmbedder is a test model defined by its data: the words of one
// group share a dimension, every other word is ignored. It counts its
// requests and texts, and fails while down.
type synonymEmbedder struct {
	groups          map[string]int
	dims            int
	requests, texts atomic.Int64
	down            atomic.Bool
}

func newSynonymEmbedder(groups ...[]string) *synonymEmbedder {
	e := &synonymEmbedder{groups: map[string]int{}, dims: len(groups) + 1}
	for i, g := range groups {
		for _, w := range g {
			e.groups[w] = i
		}
	}
	return e
}

func (e *synonymEmbedder) Name() string { return "synonyms-v1" }

func (e *synonymEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.requests.Add(1)
	if e.down.Load() {
		return nil, errors.New("embeddings: the test provider is down")
	}
	e.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, e.dims)
		v[e.dims-1] = 0.05 // never a zero vector
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return !unicode.IsLetter(r) }) {
			if g, ok := e.groups[w]; ok {
				v[g]++
			}
		}
		out[i] = v
	}
	return out, nil
}

func progress(tb testing.TB, st store.Store, model string) int {
	tb.Helper()
	done, _, err := st.(store.VectorStore).VectorProgress(tb.Context(), model)
	if err != nil {
		tb.Fatal(err)
	}
	return done
}

// TestSyncEmbedsPointers: the pointers a sync writes are embedded in one
// batched request at the end of the sync, so a search by meaning finds one
// at once; an unchanged pointer is not embedded again; with the provider
// down the sync still succeeds, warns, and the vectors are made later.
func TestSyncEmbedsPointers(t *testing.T) {
	dir := openSingle(t, copyExamples(t))
	ctx := as(t, "acme", map[string]string{"org_id": "o1", "team_id": "tm1", "project_id": "p1", "user_id": "u1"})
	emb := newSynonymEmbedder([]string{"database", "datastore"}, []string{"selection", "choice"})

	st := teststore.SQLite(t)
	mem := memory.New(st, memory.WithEmbedder(emb))
	s := knowledgesync.New(dir, st, knowledgesync.WithMemoryEmbedder(mem))
	check(t, "first sync", run(t, s, ctx, &syncv1.SyncKnowledgeRequest{}), want{added: 7})
	if got := progress(t, st, emb.Name()); got != 7 {
		t.Errorf("%d pointers have a vector after the sync, want 7", got)
	}
	if r, n := emb.requests.Load(), emb.texts.Load(); r != 1 || n != 7 {
		t.Errorf("%d embeddings requests for %d texts, want one batch of 7", r, n)
	}
	resp, err := mem.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "datastore choice"})
	if err != nil {
		t.Fatal(err)
	}
	if res := resp.GetData().GetResults(); len(res) == 0 || !strings.Contains(res[0].GetContent(), "adr-042-database-selection") {
		t.Errorf("a search sharing no word with the ADR's pointer found %v", res)
	}
	check(t, "unchanged sync", run(t, s, ctx, &syncv1.SyncKnowledgeRequest{}), want{unchanged: 7})
	if r := emb.requests.Load(); r != 2 { // one for the search's query
		t.Errorf("%d embeddings requests after an unchanged sync, want 2 (the sync's and the search's)", r)
	}

	// An outage: the sync's writes stand, its hints say the vectors are
	// pending, and they are made once the provider is back.
	st2 := teststore.SQLite(t)
	mem2 := memory.New(st2, memory.WithEmbedder(emb))
	s2 := knowledgesync.New(dir, st2, knowledgesync.WithMemoryEmbedder(mem2))
	emb.down.Store(true)
	sresp, err := s2.SyncKnowledge(ctx, &syncv1.SyncKnowledgeRequest{})
	if err != nil {
		t.Fatalf("sync-knowledge failed with the provider down: %v", err)
	}
	check(t, "sync during an outage", sresp.GetData(), want{added: 7})
	warned := false
	for _, w := range sresp.GetAgentHints().GetWarnings() {
		warned = warned || strings.Contains(w.GetMessage(), "embeddings endpoint failed")
	}
	if !warned {
		t.Errorf("no warning that the vectors are pending: %v", sresp.GetAgentHints().GetWarnings())
	}
	if got := len(pointers(t, st2, "acme")); got != 7 {
		t.Fatalf("%d pointers stored during the outage, want 7", got)
	}
	emb.down.Store(false)
	if _, err := mem2.Reembed(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := progress(t, st2, emb.Name()); got != 7 {
		t.Errorf("%d pointers have a vector once the provider is back, want 7", got)
	}
}
