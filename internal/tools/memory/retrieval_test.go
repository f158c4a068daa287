package memory_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/embed/model2vec"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
	textwords "github.com/toolsvc/toolsvc/internal/words"
)

// The retrieval set (testdata/retrieval, see its generate.py): memories,
// and queries that each ask for one of them in other words.
var retrievalDir = filepath.Join("..", "..", "..", "testdata", "retrieval")

type retrievalSet struct {
	groups   [][]string
	memories []struct{ ID, Content string }
	pairs    []struct{ Query, Expected string }
}

func loadRetrievalSet(tb testing.TB) retrievalSet {
	tb.Helper()
	var rs retrievalSet
	f, err := os.Open(filepath.Join(retrievalDir, "concepts.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	owner := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, words, _ := strings.Cut(line, ":")
		for _, g := range strings.Split(words, "|") {
			group := strings.Fields(g)
			for _, w := range group {
				if _, dup := owner[w]; dup {
					tb.Fatalf("concepts.txt: %q is in two groups", w)
				}
				owner[w] = len(rs.groups)
			}
			rs.groups = append(rs.groups, group)
		}
	}
	readJSONL(tb, "memories.jsonl", &rs.memories)
	readJSONL(tb, "pairs.jsonl", &rs.pairs)
	return rs
}

func readJSONL[T any](tb testing.TB, name string, out *[]T) {
	tb.Helper()
	readJSONLIn(tb, retrievalDir, name, out)
}

func readJSONLIn[T any](tb testing.TB, dir, name string, out *[]T) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		tb.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			tb.Fatalf("%s:%d: %v", name, i+1, err)
		}
		*out = append(*out, v)
	}
}

type retrievalScores struct {
	r1, r5, r10, mrr float64
}

func (s retrievalScores) String() string {
	return fmt.Sprintf("recall@1 %.3f  recall@5 %.3f  recall@10 %.3f  MRR %.3f", s.r1, s.r5, s.r10, s.mrr)
}

// runRetrieval loads the set's memories into st through the store's bulk
// insert, embeds them with emb (Reembed), and scores lexical and hybrid
// search-memories over the pairs.
func runRetrieval(tb testing.TB, st store.Store, rs retrievalSet, emb memory.Embedder) (lexical, hybrid retrievalScores) {
	tb.Helper()
	c := scope.Caller{Tenant: "t1", IDs: map[string]string{"user_id": "u1"}}
	scopeID, _ := c.ScopeID(store.LayerUser)
	ms := make([]*store.Memory, len(rs.memories))
	for i, m := range rs.memories {
		ms[i] = &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: scopeID, Content: m.Content}
	}
	if err := st.(store.MemoryBulkAdder).AddMemories(tb.Context(), ms); err != nil {
		tb.Fatal(err)
	}
	idOf := map[string]string{}
	for i, m := range rs.memories {
		idOf[m.ID] = ms[i].ID
	}
	hyb := memory.New(st, memory.WithEmbedder(emb))
	if _, err := hyb.Reembed(tb.Context(), nil); err != nil {
		tb.Fatalf("Reembed: %v", err)
	}
	ctx := scope.WithCaller(tb.Context(), c)
	score := func(s *memory.Service) retrievalScores {
		var out retrievalScores
		for _, p := range rs.pairs {
			resp, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: p.Query, Threshold: ptr(0.0), Limit: ptr(uint32(10))})
			if err != nil {
				tb.Fatalf("%q: %v", p.Query, err)
			}
			for rank, r := range resp.GetData().GetResults() {
				if r.GetMemoryId() != idOf[p.Expected] {
					continue
				}
				out.mrr += 1 / float64(rank+1)
				for _, k := range []struct {
					n int
					v *float64
				}{{1, &out.r1}, {5, &out.r5}, {10, &out.r10}} {
					if rank < k.n {
						*k.v++
					}
				}
			}
		}
		n := float64(len(rs.pairs))
		out.r1, out.r5, out.r10, out.mrr = out.r1/n, out.r5/n, out.r10/n, out.mrr/n
		return out
	}
	return score(memory.New(st)), score(hyb)
}

// TestRetrievalSet checks the set (200+ pairs over thousands of memories,
// no content word shared within a pair) and ranking correctness with the
// set's own embedding model: recall@5 of hybrid search far above lexical.
func TestRetrievalSet(t *testing.T) {
	rs := loadRetrievalSet(t)
	if len(rs.pairs) < 200 || len(rs.memories) < 2000 {
		t.Fatalf("%d pairs over %d memories; want at least 200 over a few thousand", len(rs.pairs), len(rs.memories))
	}
	content := map[string]string{}
	for _, m := range rs.memories {
		content[m.ID] = m.Content
	}
	stems := func(text string) map[string]bool {
		out := map[string]bool{}
		for _, w := range textwords.Content(text) {
			out[textwords.Stem(w)] = true
		}
		return out
	}
	for _, p := range rs.pairs {
		m := stems(content[p.Expected])
		for s := range stems(p.Query) {
			if m[s] {
				t.Errorf("%q shares %q with %q", p.Query, s, content[p.Expected])
			}
		}
	}
	if raceEnabled {
		rs.pairs = rs.pairs[:60]
	}
	lex, hyb := runRetrieval(t, teststore.SQLite(t), rs, newConceptEmbedder("retrieval-concepts", rs.groups))
	t.Logf("lexical: %s", lex)
	t.Logf("hybrid:  %s", hyb)
	if hyb.r5 < 0.9 || lex.r5 > 0.05 {
		t.Errorf("recall@5: hybrid %.3f (want >= 0.9), lexical %.3f (want <= 0.05: no pair shares a word)", hyb.r5, lex.r5)
	}
}

// TestRetrievalEval is `make eval`: the retrieval set scored with a real
// model, TOOLSVC_EVAL_EMBEDDINGS_URL (an OpenAI-compatible endpoint, model
// TOOLSVC_EVAL_EMBEDDINGS_MODEL) or TOOLSVC_EVAL_MODEL_DIR (a model2vec
// directory). Without either it is skipped.
func TestRetrievalEval(t *testing.T) {
	var emb memory.Embedder
	switch url, dir := os.Getenv("TOOLSVC_EVAL_EMBEDDINGS_URL"), os.Getenv("TOOLSVC_EVAL_MODEL_DIR"); {
	case dir != "":
		m, err := model2vec.Load(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		emb = m
	case url != "":
		model := os.Getenv("TOOLSVC_EVAL_EMBEDDINGS_MODEL")
		if model == "" {
			model = "text-embedding-3-small"
		}
		e, err := memory.NewHTTPEmbedder(memory.HTTPEmbedderConfig{URL: url, Model: model, APIKey: os.Getenv("TOOLSVC_EVAL_EMBEDDINGS_KEY")})
		if err != nil {
			t.Fatal(err)
		}
		emb = e
	default:
		t.Skip("set TOOLSVC_EVAL_EMBEDDINGS_URL or TOOLSVC_EVAL_MODEL_DIR to evaluate a real model")
	}
	rs := loadRetrievalSet(t)
	lex, hyb := runRetrieval(t, teststore.SQLite(t), rs, emb)
	fmt.Printf("retrieval set: %d queries over %d memories, model %q\n", len(rs.pairs), len(rs.memories), memory.ModelName(emb))
	fmt.Printf("  lexical  %s\n  hybrid   %s\n", lex, hyb)
}
