package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
)

func caller(tb testing.TB, tenant string, ids map[string]string) context.Context {
	tb.Helper()
	return scope.WithCaller(tb.Context(), scope.Caller{Tenant: tenant, IDs: ids})
}

func add(tb testing.TB, ctx context.Context, s *memory.Service, content, layer string, tags ...string) string {
	tb.Helper()
	resp, err := s.AddMemory(ctx, &memoryv1.AddMemoryRequest{Content: content, Layer: layer, Tags: tags})
	if err != nil {
		tb.Fatalf("AddMemory(%q): %v", content, err)
	}
	return resp.GetData().GetMemoryId()
}

func wantCode(tb testing.TB, err error, code toolerr.Code) *toolerr.Error {
	tb.Helper()
	te, ok := toolerr.As(err)
	if !ok || te.Code != code {
		tb.Fatalf("error = %v, want %s", err, code)
	}
	return te
}

func ptr[T any](v T) *T { return &v }

// vectorServer is an OpenAI-compatible embeddings endpoint on loopback
// that maps each text to a deterministic vector: one dimension per word of
// vocab, 1 when the text mentions it.
func vectorServer(tb testing.TB, vocab []string, calls *int) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			http.Error(w, "wrong route", http.StatusNotFound)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "test-model" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		*calls++
		type datum struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data []datum `json:"data"`
		}
		for i, text := range req.Input {
			v := make([]float32, len(vocab)+1)
			v[len(vocab)] = 0.01 // never a zero vector
			for j, w := range vocab {
				if strings.Contains(strings.ToLower(text), w) {
					v[j] = 1
				}
			}
			out.Data = append(out.Data, datum{Index: i, Embedding: v})
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

func TestHybridSearch(t *testing.T) {
	st := teststore.SQLite(t)
	calls := 0
	url := vectorServer(t, []string{"postgres", "database", "relational", "mongo"}, &calls)
	emb, err := memory.NewHTTPEmbedder(memory.HTTPEmbedderConfig{URL: url, Model: "test-model"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := caller(t, "t1", map[string]string{"user_id": "u1"})
	lexical := memory.New(st)
	hybrid := memory.New(st, memory.WithEmbedder(emb))
	// Written through the hybrid service, each memory is embedded once.
	pg := add(t, ctx, hybrid, "Our relational database is postgres", "user")
	mongo := add(t, ctx, hybrid, "The events database is mongo", "user")

	search := func(s *memory.Service) map[string]float64 {
		resp, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "relational database", Threshold: ptr(0.0)})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, r := range resp.GetData().GetResults() {
			out[r.GetMemoryId()] = r.GetScore()
		}
		return out
	}
	lex, hyb := search(lexical), search(hybrid)
	if calls != 3 {
		t.Errorf("embedding requests = %d, want 3 (one per write, one for the query: stored vectors are not re-made)", calls)
	}
	// Query vector (relational, database) against pg (postgres, database,
	// relational) has cosine 2/sqrt(6) ≈ 0.816; against mongo (database,
	// mongo) 1/2 = 0.5. Hybrid = 1 - (1 - cosine)(1 - lexical).
	for id, cos := range map[string]float64{pg: 2 / math.Sqrt(6), mongo: 0.5} {
		want := 1 - (1-cos)*(1-lex[id])
		if math.Abs(hyb[id]-want) > 0.002 {
			t.Errorf("hybrid score of %s = %v, want %v (lexical %v)", id, hyb[id], want, lex[id])
		}
	}
	if hyb[pg] <= hyb[mongo] {
		t.Errorf("hybrid ranks mongo (%v) above postgres (%v)", hyb[mongo], hyb[pg])
	}
}

func TestHybridSearchFallsBack(t *testing.T) {
	st := teststore.SQLite(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "model not loaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	emb, err := memory.NewHTTPEmbedder(memory.HTTPEmbedderConfig{URL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	s := memory.New(st, memory.WithEmbedder(emb))
	ctx := caller(t, "t1", map[string]string{"user_id": "u1"})
	add(t, ctx, s, "postgres is the relational database", "user")
	resp, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "relational database"})
	if err != nil {
		t.Fatalf("search failed instead of falling back: %v", err)
	}
	if n := len(resp.GetData().GetResults()); n != 1 {
		t.Errorf("results = %d, want 1", n)
	}
	found := false
	for _, w := range resp.GetAgentHints().GetWarnings() {
		found = found || strings.Contains(w.GetMessage(), "embeddings endpoint failed")
	}
	if !found {
		t.Errorf("no warning about the failed embedder in %v", resp.GetAgentHints().GetWarnings())
	}
}

func TestNewHTTPEmbedder(t *testing.T) {
	tests := []struct {
		name, url, model string
		wantErr          bool
	}{
		{name: "loopback http", url: "http://127.0.0.1:8000", model: "m"},
		{name: "localhost http", url: "http://localhost:8000/v1", model: "m"},
		{name: "ipv6 loopback", url: "http://[::1]:8000", model: "m"},
		{name: "https anywhere", url: "https://embeddings.example.com", model: "m"},
		{name: "plain http to a remote host", url: "http://10.0.0.8:8000", model: "m", wantErr: true},
		{name: "other scheme", url: "ftp://127.0.0.1", model: "m", wantErr: true},
		{name: "no host", url: "http://", model: "m", wantErr: true},
		{name: "no model", url: "http://127.0.0.1:8000", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := memory.NewHTTPEmbedder(memory.HTTPEmbedderConfig{URL: tc.url, Model: tc.model})
			if (err != nil) != tc.wantErr {
				t.Errorf("err = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

func TestHTTPEmbedderBadResponses(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		maxBody    int64
	}{
		{name: "server error", body: `{}`, status: 500},
		{name: "malformed json", body: `{"data": [`, status: 200},
		{name: "missing vector", body: `{"data": [{"index": 0, "embedding": [1]}]}`, status: 200},
		{name: "index out of range", body: `{"data": [{"index": 0, "embedding": [1]}, {"index": 5, "embedding": [1]}]}`, status: 200},
		{name: "dimension mismatch", body: `{"data": [{"index": 0, "embedding": [1]}, {"index": 1, "embedding": [1, 2]}]}`, status: 200},
		{name: "body too large", body: `{"data": [{"index": 0, "embedding": [1]}, {"index": 1, "embedding": [1]}]}`, status: 200, maxBody: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			emb, err := memory.NewHTTPEmbedder(memory.HTTPEmbedderConfig{URL: srv.URL, Model: "m", MaxBodyBytes: tc.maxBody})
			if err != nil {
				t.Fatal(err)
			}
			_, err = emb.Embed(t.Context(), []string{"a", "b"})
			var ee *memory.EmbedError
			if !errors.As(err, &ee) {
				t.Fatalf("err = %v, want *memory.EmbedError", err)
			}
		})
	}
}

func TestDeleteOtherScope(t *testing.T) {
	st := teststore.SQLite(t)
	s := memory.New(st)
	alice := caller(t, "t1", map[string]string{"user_id": "alice"})
	bob := caller(t, "t1", map[string]string{"user_id": "bob"})
	id := add(t, alice, s, "alice likes tea", "user")
	_, err := s.DeleteMemory(bob, &memoryv1.DeleteMemoryRequest{MemoryId: id})
	te := wantCode(t, err, toolerr.NotFound)
	if te.Details["memoryId"] != id {
		t.Errorf("details = %v, want memoryId %s", te.Details, id)
	}
	if _, err := st.GetMemory(t.Context(), "t1", id); err != nil {
		t.Errorf("bob's failed delete removed alice's memory: %v", err)
	}
}

func TestAddWarnsAboutNearDuplicates(t *testing.T) {
	st := teststore.SQLite(t)
	s := memory.New(st)
	ctx := caller(t, "t1", map[string]string{"user_id": "u1"})
	first := add(t, ctx, s, "The user prefers dark mode in every editor", "user")
	resp, err := s.AddMemory(ctx, &memoryv1.AddMemoryRequest{Content: "the user prefers dark mode in every editor!"})
	if err != nil {
		t.Fatal(err)
	}
	h := resp.GetAgentHints()
	if len(h.GetWarnings()) != 1 || h.GetWarnings()[0].GetType() != "duplicate" || h.GetWarnings()[0].GetRelatedIds()[0] != first {
		t.Errorf("warnings = %v, want one duplicate warning about %s", h.GetWarnings(), first)
	}
	other, err := s.AddMemory(ctx, &memoryv1.AddMemoryRequest{Content: "Deploys happen on Tuesdays", Tags: []string{"ops"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(other.GetAgentHints().GetWarnings()) != 0 {
		t.Errorf("unrelated memory got warnings %v", other.GetAgentHints().GetWarnings())
	}
	if other.GetAgentHints().GetConfidence() <= h.GetConfidence() {
		t.Errorf("confidence of a novel memory (%v) not above a duplicate's (%v)", other.GetAgentHints().GetConfidence(), h.GetConfidence())
	}
}

func TestSearchIgnoresOrphanedPointers(t *testing.T) {
	st := teststore.SQLite(t)
	s := memory.New(st)
	ctx := caller(t, "t1", map[string]string{"org_id": "o1"})
	p := &store.Memory{Tenant: "t1", Layer: store.LayerOrg, ScopeID: "o1", Content: "[adr] Queue selection: use NATS",
		KnowledgeItemID: "adr-1", ContentHash: "h"}
	if _, err := st.UpsertPointer(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		resp, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "queue selection"})
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.GetData().GetResults())
	}
	if n := count(); n != 1 {
		t.Fatalf("before orphaning: %d results, want 1", n)
	}
	if _, err := st.MarkOrphaned(t.Context(), "t1", []string{"adr-1"}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Errorf("after orphaning: %d results, want 0", n)
	}
}
