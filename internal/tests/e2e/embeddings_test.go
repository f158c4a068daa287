package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/model2vec"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestOfflineModelRanksHybrid: with --embeddings-model-dir pointing at a
// model2vec model (a small real one written by the test), search-memories
// blends embedding similarity into its scores on every transport and both
// stores, finds a memory by meaning when the query shares no word with it,
// and says so in its hints; the model loads through the same code a
// published one would.
func TestOfflineModelRanksHybrid(t *testing.T) {
	dir := offlineModel(t)
	for _, backend := range []string{testserver.SQLite, testserver.Postgres} {
		t.Run(backend, func(t *testing.T) { offlineModelRanksHybrid(t, backend, dir) })
	}
}

// offlineModel writes a small real model2vec model and returns its
// directory: receipts and invoices mean the same to it, and so do
// database and PostgreSQL.
func offlineModel(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "potion-test")
	if err := model2vec.Write(dir, model2vec.Spec{
		Tokens:    []string{"[PAD]", "[UNK]", "invoices", "billing", "postgresql", "stores", "the", "service", "in", "receipts", "database"},
		Rows:      [][]float32{{0, 0}, {0, 0}, {1, 0}, {0.9, 0.1}, {0, 1}, {0.5, 0.5}, {0.1, 0.1}, {0.6, 0.4}, {0.1, 0.1}, {1, 0}, {0, 1}},
		Normalize: true,
	}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func offlineModelRanksHybrid(t *testing.T, backend, dir string) {
	s := testserver.New(t, testserver.Options{Backend: backend, Configure: func(c *server.Config) { c.EmbeddingsModelDir = dir }})
	for _, tr := range []Transport{GRPC{S: s}, REST{S: s}, MCP{S: s}} {
		t.Run(tr.Name(), func(t *testing.T) {
			ctx := context.Background()
			hdr := map[string]string{"x-user-id": "u-" + tr.Name()}
			out, err := tr.Call(ctx, "", "add-memory", map[string]any{"content": "The billing service stores invoices in PostgreSQL", "layer": "user"}, hdr)
			if err != nil || out.Code != "OK" {
				t.Fatalf("add-memory: %v %v", err, out.Error)
			}
			out, err = tr.Call(ctx, "", "search-memories", map[string]any{"query": "billing invoices PostgreSQL", "layers": []any{"user"}}, hdr)
			if err != nil || out.Code != "OK" {
				t.Fatalf("search-memories: %v %v", err, out.Error)
			}
			if rs, _ := out.Result["data"].(map[string]any)["results"].([]any); len(rs) != 1 {
				t.Fatalf("results = %v", out.Result["data"])
			}
			hints, _ := out.Result["agentHints"].(map[string]any)
			if as := strings.ToLower(strings.Join(toStrings(hints["assumptions"]), " ")); !strings.Contains(as, "embedding similarity") {
				t.Fatalf("hints do not say the ranking is hybrid: %v", hints["assumptions"])
			}
			// No word in common: found by meaning, at the default
			// threshold.
			out, err = tr.Call(ctx, "", "search-memories", map[string]any{"query": "which database holds the receipts"}, hdr)
			if err != nil || out.Code != "OK" {
				t.Fatalf("search-memories: %v %v", err, out.Error)
			}
			rs, _ := out.Result["data"].(map[string]any)["results"].([]any)
			if len(rs) != 1 {
				t.Fatalf("a search by meaning found %v", out.Result["data"])
			}
			hints, _ = out.Result["agentHints"].(map[string]any)
			if as := strings.Join(toStrings(hints["assumptions"]), " "); !strings.Contains(as, "1 by meaning only") {
				t.Errorf("hints do not say the result was found by meaning: %v", hints["assumptions"])
			}
		})
	}
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
