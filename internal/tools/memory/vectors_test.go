package memory_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
)

// conceptEmbedder is a test embedding model defined by its data: each word
// of a concept group maps to that concept's dimension, any other word to
// one of a few hashed dimensions with a small weight; a text is the sum of
// its words. Words of one group are synonyms to it, whatever their
// spelling, which is what an embedding model adds to full text.
type conceptEmbedder struct {
	name    string
	concept map[string]int
	dims    int
	groups  int
	calls   atomic.Int64
	down    atomic.Bool
}

const hashedDims = 64

func newConceptEmbedder(name string, groups [][]string) *conceptEmbedder {
	e := &conceptEmbedder{name: name, concept: map[string]int{}, dims: len(groups) + hashedDims, groups: len(groups)}
	for i, g := range groups {
		for _, w := range g {
			e.concept[w] = i
		}
	}
	return e
}

var errDown = errors.New("embeddings: the test provider is down")

func (e *conceptEmbedder) Name() string { return e.name }

func (e *conceptEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	if e.down.Load() {
		return nil, errDown
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, e.dims)
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if c, ok := e.concept[w]; ok {
				v[c]++
				continue
			}
			h := fnv.New32a()
			h.Write([]byte(w))
			v[e.groups+int(h.Sum32()%hashedDims)] += 0.2
		}
		out[i] = v
	}
	return out, nil
}

// issueGroups are the synonyms behind the three searches below.
var issueGroups = [][]string{
	{"coding", "programming", "code", "functional", "oop", "patterns"},
	{"preferences", "prefers", "likes"},
	{"database", "postgresql", "stores", "holds"},
	{"bills", "invoices", "billing"},
	{"ship", "deploys", "happen", "production", "release"},
	{"when", "tuesday", "every", "standup", "schedule"},
}

var issueCases = []struct{ memory, query string }{
	{"User prefers functional programming patterns over OOP", "coding preferences"},
	{"The billing service stores invoices in PostgreSQL", "what database holds the bills"},
	{"Deploys happen every Tuesday after the standup", "when do we ship to production"},
}

func TestSearchFindsByMeaning(t *testing.T) {
	for _, b := range benchBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			emb := newConceptEmbedder("concepts-v1", issueGroups)
			s := memory.New(st, memory.WithEmbedder(emb))
			lexical := memory.New(st)
			ctx := caller(t, "t1", map[string]string{"user_id": "u1"})
			ids := map[string]string{}
			for _, c := range issueCases {
				ids[c.query] = add(t, ctx, s, c.memory, "user")
			}
			add(t, ctx, s, "The office plants are watered on Fridays", "user")
			other := caller(t, "t2", map[string]string{"user_id": "u1"})
			add(t, other, s, "Another tenant also ships to production every Tuesday", "user")

			for _, c := range issueCases {
				resp, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: c.query})
				if err != nil {
					t.Fatal(err)
				}
				res := resp.GetData().GetResults()
				if len(res) == 0 || res[0].GetMemoryId() != ids[c.query] {
					t.Errorf("%q: results %v, want %q first", c.query, res, c.memory)
					continue
				}
				for _, r := range res {
					if r.GetScore() < 0 || r.GetScore() > 1 {
						t.Errorf("score %v outside 0..1", r.GetScore())
					}
					if strings.Contains(r.GetContent(), "Another tenant") {
						t.Errorf("%q returned another tenant's memory", c.query)
					}
				}
				hints := strings.Join(resp.GetAgentHints().GetAssumptions(), " ")
				if !strings.Contains(hints, "hybrid") || !strings.Contains(hints, "concepts-v1") {
					t.Errorf("hints do not say the search was hybrid with its model: %s", hints)
				}
				if cat := resp.GetAgentHints().GetRelatedResources()[0].GetMetadata().GetCategory(); !strings.Contains(cat, "meaning") {
					t.Errorf("%q: first result's signals %q, want meaning", c.query, cat)
				}
				// Without embeddings, the search is today's, and says it
				// was lexical.
				lresp, err := lexical.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: c.query})
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(strings.Join(lresp.GetAgentHints().GetAssumptions(), " "), "Search was lexical") {
					t.Errorf("lexical hints %v", lresp.GetAgentHints().GetAssumptions())
				}
			}
			// A deleted memory leaves the index with its row.
			if _, err := s.DeleteMemory(ctx, &memoryv1.DeleteMemoryRequest{MemoryId: ids[issueCases[0].query]}); err != nil {
				t.Fatal(err)
			}
			resp, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: issueCases[0].query, Threshold: ptr(0.0)})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range resp.GetData().GetResults() {
				if r.GetMemoryId() == ids[issueCases[0].query] {
					t.Error("a deleted memory was found")
				}
			}
		})
	}
}

// TestProviderOutageLosesNoWrite: add-memory succeeds while the provider
// is down; the background filler embeds the memory once it is back.
func TestProviderOutageLosesNoWrite(t *testing.T) {
	st := teststore.SQLite(t)
	emb := newConceptEmbedder("concepts-v1", issueGroups)
	s := memory.New(st, memory.WithEmbedder(emb))
	ctx := caller(t, "t1", map[string]string{"user_id": "u1"})
	emb.down.Store(true)
	resp, err := s.AddMemory(ctx, &memoryv1.AddMemoryRequest{Content: issueCases[2].memory})
	if err != nil {
		t.Fatalf("add-memory failed with the provider down: %v", err)
	}
	id := resp.GetData().GetMemoryId()
	if _, err := st.GetMemory(ctx, "t1", id); err != nil {
		t.Fatalf("the memory was not stored: %v", err)
	}
	warned := false
	for _, w := range resp.GetAgentHints().GetWarnings() {
		warned = warned || strings.Contains(w.GetMessage(), "embeddings endpoint failed")
	}
	if !warned {
		t.Errorf("no warning that the vector is pending: %v", resp.GetAgentHints().GetWarnings())
	}

	emb.down.Store(false)
	runCtx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.RunVectors(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	vs := st.(store.VectorStore)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, _, err := vs.VectorProgress(ctx, "concepts-v1")
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the filler did not embed the memory written during the outage")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The index catches up with the store's vector.
	for {
		sr, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: issueCases[2].query})
		if err != nil {
			t.Fatal(err)
		}
		if len(sr.GetData().GetResults()) > 0 && sr.GetData().GetResults()[0].GetMemoryId() == id {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the memory written during the outage is not found by meaning")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReembedOnModelChange: a new model counts every vector of the old one
// as missing; Reembed makes them, reports progress, resumes after a
// failure, and search never mixes the two models.
func TestReembedOnModelChange(t *testing.T) {
	st := teststore.SQLite(t)
	old := newConceptEmbedder("concepts-v1", issueGroups)
	s1 := memory.New(st, memory.WithEmbedder(old))
	ctx := caller(t, "t1", map[string]string{"user_id": "u1"})
	for i := range 150 {
		add(t, ctx, s1, issueCases[i%3].memory+" "+strings.Repeat("x", i+1), "user")
	}

	next := newConceptEmbedder("concepts-v2", issueGroups)
	s2 := memory.New(st, memory.WithEmbedder(next))
	// Before reembedding, v2 has no vectors: search is lexical on the
	// stored side and does not compare v1 vectors with a v2 query.
	resp, err := s2.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "when do we ship to production", Threshold: ptr(0.0)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.GetAgentHints().GetRelatedResources() {
		if strings.Contains(r.GetMetadata().GetCategory(), "meaning") {
			t.Fatalf("a v2 search matched %s by a v1 vector", r.GetId())
		}
	}

	// The first run fails part-way: what it stored stays.
	var reports []memory.Progress
	flaky := &flakyEmbedder{conceptEmbedder: next, failFrom: 2} // the second batch fails
	s3 := memory.New(st, memory.WithEmbedder(flaky))
	if _, err := s3.Reembed(ctx, func(p memory.Progress) { reports = append(reports, p) }); !errors.Is(err, errDown) {
		t.Fatalf("first Reembed error = %v, want the provider's", err)
	}
	vs := st.(store.VectorStore)
	mid, total, _ := vs.VectorProgress(ctx, "concepts-v2")
	if mid == 0 || mid >= total || total != 150 {
		t.Fatalf("after the failed run %d of %d are embedded, want some", mid, total)
	}
	p, err := s2.Reembed(ctx, func(p memory.Progress) { reports = append(reports, p) })
	if err != nil {
		t.Fatalf("Reembed: %v", err)
	}
	if p.Done != 150 || p.Total != 150 || p.Model != "concepts-v2" {
		t.Errorf("final progress %+v, want 150 of 150 for concepts-v2", p)
	}
	if len(reports) < 3 {
		t.Errorf("progress reports %v, want one per batch", reports)
	}
	if n, _, _ := vs.VectorProgress(ctx, "concepts-v1"); n != 0 {
		t.Errorf("%d v1 vectors remain after reembedding", n)
	}
	// A fresh service (a restart) rebuilds its index from the store.
	s4 := memory.New(st, memory.WithEmbedder(next))
	runCtx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s4.RunVectors(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	calls := next.calls.Load()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := s4.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "what database holds the bills", Limit: ptr(uint32(3))})
		if err != nil {
			t.Fatal(err)
		}
		if rs := resp.GetData().GetResults(); len(rs) == 3 && strings.HasPrefix(rs[0].GetContent(), "The billing service") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted service does not find memories by meaning")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := next.calls.Load() - calls; got > 20 {
		t.Errorf("the restart made %d embedding calls: vectors were re-made instead of loaded", got)
	}
	if _, err := memory.New(st).Reembed(ctx, nil); !errors.Is(err, memory.ErrNoVectors) {
		t.Errorf("Reembed without an embedder: %v, want ErrNoVectors", err)
	}
}

// flakyEmbedder fails from its failFrom-th call on.
type flakyEmbedder struct {
	*conceptEmbedder
	n, failFrom int64
}

func (f *flakyEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.n++
	if f.n >= f.failFrom {
		return nil, errDown
	}
	return f.conceptEmbedder.Embed(ctx, texts)
}

// racingStore runs after, when set, once a search's store query has
// answered: what a concurrent call could do between the search and the
// read of the rows it shows.
type racingStore struct {
	store.Store
	store.VectorStore
	after func()
	// light records whether the last search answered light candidates.
	light bool
}

func (r *racingStore) SearchMemories(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	res, err := r.Store.SearchMemories(ctx, q)
	r.light = res.Light
	if r.after != nil {
		r.after()
	}
	return res, err
}

// TestHybridPageRereadsRows checks that a memory deleted between a hybrid
// search's full-text query (whose candidates are light) and the read of
// the rows it shows is neither shown nor counted, and that the next
// result takes its place.
func TestHybridPageRereadsRows(t *testing.T) {
	for _, b := range benchBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			rs := &racingStore{Store: st, VectorStore: st.(store.VectorStore)}
			s := memory.New(rs, memory.WithEmbedder(newConceptEmbedder("concepts-v1", issueGroups)))
			ctx := caller(t, "t1", map[string]string{"user_id": "u1"})
			for _, c := range []string{"caching of the billing pages", "caching rules for invoices", "caching the deploy artefacts", "caching everything twice"} {
				add(t, ctx, s, c, "user")
			}
			req := &memoryv1.SearchMemoriesRequest{Query: "caching", Limit: ptr(uint32(2)), Threshold: ptr(0.0)}
			before, err := s.SearchMemories(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !rs.light {
				t.Skip("this store answers full rows, all of one snapshot: nothing is read after the search")
			}
			gone := before.GetData().GetResults()[0].GetMemoryId()
			rs.after = func() {
				if err := st.DeleteMemory(context.Background(), "t1", gone); err != nil {
					t.Error(err)
				}
				rs.after = nil
			}
			resp, err := s.SearchMemories(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			res := resp.GetData().GetResults()
			if len(res) != 2 || resp.GetData().GetTotalCount() != before.GetData().GetTotalCount()-1 {
				t.Fatalf("after a delete: %d results of %d, want 2 of %d", len(res), resp.GetData().GetTotalCount(), before.GetData().GetTotalCount()-1)
			}
			for _, r := range res {
				if r.GetMemoryId() == gone {
					t.Errorf("the deleted memory %s was shown", gone)
				}
				if r.GetCreatedAt() == nil || r.GetLayer() != "user" || r.GetContent() == "" {
					t.Errorf("result without its row: %v", r)
				}
			}
			if got, want := res[0].GetMemoryId(), before.GetData().GetResults()[1].GetMemoryId(); got != want {
				t.Errorf("first result %s, want the next one %s", got, want)
			}
		})
	}
}

// calibratedEmbedder is a conceptEmbedder that declares a similarity
// floor (memory.Calibrated).
type calibratedEmbedder struct {
	*conceptEmbedder
	floor float64
}

func (c calibratedEmbedder) SimilarityFloor() float64 { return c.floor }

// TestSearchCalibratesToTheFloor: with an embedder that declares its
// similarity floor, a memory found by meaning alone scores its similarity
// above the floor, rescaled: "when do we ship to production" is 0.855
// similar to the Tuesday deploys (no shared word), 0.64 above a floor of
// 0.6 (under the default threshold), and shown at a lower threshold with
// low confidence, since no word supports it.
func TestSearchCalibratesToTheFloor(t *testing.T) {
	st := benchBackends(t)[0].open(t)
	ctx := caller(t, "t1", map[string]string{"user_id": "u1"})
	plain := memory.New(st, memory.WithEmbedder(newConceptEmbedder("concepts-v1", issueGroups)))
	id := add(t, ctx, plain, issueCases[2].memory, "user")
	add(t, ctx, plain, "The office plants are watered on Fridays", "user")
	calibrated := memory.New(st, memory.WithEmbedder(calibratedEmbedder{newConceptEmbedder("concepts-v1", issueGroups), 0.6}))
	if err := memory.RebuildIndex(ctx, calibrated); err != nil {
		t.Fatal(err)
	}
	search := func(s *memory.Service, threshold *float64) *memoryv1.SearchMemoriesResponse {
		t.Helper()
		resp, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: issueCases[2].query, Threshold: threshold})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if res := search(plain, nil).GetData().GetResults(); len(res) != 1 || res[0].GetMemoryId() != id || math.Abs(res[0].GetScore()-0.855) > 0.005 {
		t.Fatalf("uncalibrated: %v, want the deploys memory at about 0.855", res)
	}
	if res := search(calibrated, nil).GetData().GetResults(); len(res) != 0 {
		t.Fatalf("calibrated, default threshold: %v, want nothing (0.64 < 0.7)", res)
	}
	resp := search(calibrated, ptr(0.5))
	res := resp.GetData().GetResults()
	if len(res) != 1 || res[0].GetMemoryId() != id || math.Abs(res[0].GetScore()-(0.855-0.6)/0.4) > 0.01 {
		t.Fatalf("calibrated, threshold 0.5: %v, want the deploys memory at about 0.64", res)
	}
	if q := resp.GetAgentHints().GetSourceQuality(); q != "low" {
		t.Errorf("quality %v: a result found by meaning alone, under 0.85, is low confidence", q)
	}
	if cat := resp.GetAgentHints().GetRelatedResources()[0].GetMetadata().GetCategory(); cat != "matched by meaning" {
		t.Errorf("signals %q, want matched by meaning", cat)
	}
	if a := strings.Join(resp.GetAgentHints().GetAssumptions(), " "); !strings.Contains(a, "similarity floor 0.60") {
		t.Errorf("the hints do not say the similarity was rescaled above the floor: %s", a)
	}
}

// fixedEmbedder gives each text its vector from a table; a text not in
// it gets unit vector e(len-1), orthogonal to every vector the tests use.
type fixedEmbedder struct {
	vecs map[string][]float32
	dims int
}

func (f fixedEmbedder) Name() string { return "fixed-v1" }

func (f fixedEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if v, ok := f.vecs[t]; ok {
			out[i] = v
			continue
		}
		out[i] = make([]float32, f.dims)
		out[i][f.dims-1] = 1
	}
	return out, nil
}

type calibratedFixed struct {
	fixedEmbedder
	floor float64
}

func (c calibratedFixed) SimilarityFloor() float64 { return c.floor }

// TestSearchCalibratedFusion pins the fusion of a calibrated search
// (memory.ScoreCalibrated) through search-memories: a near miss sharing
// one of the question's four content words ("app") is ranked by its
// similarity alone, under the paraphrase that shares none, and neither
// reaches the default threshold; the same vectors without a declared
// floor keep the fuzzy "or", which lifts the near miss first. Cosines to
// the query: paraphrase 0.725, near miss 0.675; floor 0.5, so 0.45 and
// 0.35 rescaled. Uncalibrated, the near miss (coverage 1/4, the best
// relevance) scores 1 − 0.325 × (1 − 0.4375) = 0.8172.
func TestSearchCalibratedFusion(t *testing.T) {
	const (
		query      = "who runs the phone app group"
		paraphrase = "Alice leads the mobile team"
		nearMiss   = "The Android app mailing list is android@example.com"
	)
	unit := func(c float64, dim int) []float32 {
		v := make([]float32, 4)
		v[0], v[dim] = float32(c), float32(math.Sqrt(1-c*c))
		return v
	}
	fixed := fixedEmbedder{dims: 4, vecs: map[string][]float32{
		query: {1, 0, 0, 0}, paraphrase: unit(0.725, 1), nearMiss: unit(0.675, 2),
	}}
	st := benchBackends(t)[0].open(t)
	ctx := caller(t, "t1", map[string]string{"user_id": "u1"})
	plain := memory.New(st, memory.WithEmbedder(fixed))
	pID := add(t, ctx, plain, paraphrase, "user")
	nID := add(t, ctx, plain, nearMiss, "user")
	calibrated := memory.New(st, memory.WithEmbedder(calibratedFixed{fixed, 0.5}))
	if err := memory.RebuildIndex(ctx, calibrated); err != nil {
		t.Fatal(err)
	}
	var signals []string // of the last search's results, in order
	search := func(s *memory.Service, threshold *float64) []*memoryv1.MemoryResult {
		t.Helper()
		resp, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: query, Threshold: threshold})
		if err != nil {
			t.Fatal(err)
		}
		signals = nil
		for _, r := range resp.GetAgentHints().GetRelatedResources() {
			signals = append(signals, r.GetMetadata().GetCategory())
		}
		return resp.GetData().GetResults()
	}
	type ranked struct {
		id    string
		score float64
	}
	check := func(name string, got []*memoryv1.MemoryResult, want ...ranked) {
		t.Helper()
		ok := len(got) == len(want)
		for i := 0; ok && i < len(want); i++ {
			ok = got[i].GetMemoryId() == want[i].id && math.Abs(got[i].GetScore()-want[i].score) <= 1e-3
		}
		if !ok {
			var g []string
			for _, r := range got {
				g = append(g, fmt.Sprintf("%q %.4f", r.GetContent(), r.GetScore()))
			}
			t.Errorf("%s: got [%s], want %v (paraphrase %s, near miss %s)", name, strings.Join(g, ", "), want, pID, nID)
		}
	}
	check("calibrated, threshold 0", search(calibrated, ptr(0.0)), ranked{pID, 0.45}, ranked{nID, 0.35})
	// The near miss's one word did not count: the hints say meaning
	// alone ranked it.
	if want := []string{"matched by meaning", "matched by meaning"}; !slices.Equal(signals, want) {
		t.Errorf("calibrated signals %q, want %q", signals, want)
	}
	check("calibrated, default threshold", search(calibrated, nil))
	check("uncalibrated, default threshold", search(plain, nil), ranked{nID, 0.8172}, ranked{pID, 0.725})
	if want := []string{"matched by words and meaning", "matched by meaning"}; !slices.Equal(signals, want) {
		t.Errorf("uncalibrated signals %q, want %q", signals, want)
	}
}
