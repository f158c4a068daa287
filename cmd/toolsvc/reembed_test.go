package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/model2vec"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/backends"
)

// TestReembed embeds a store's memories with an offline model written in
// the model2vec format, then finds nothing left to do on a second run.
func TestReembed(t *testing.T) {
	dir := t.TempDir()
	modelDir := filepath.Join(dir, "tiny-model")
	tokens := []string{"[UNK]", "deploys", "tuesday", "invoices", "postgres", "##s"}
	rows := make([][]float32, len(tokens))
	for i := range rows {
		rows[i] = make([]float32, 4)
		rows[i][i%4] = 1
	}
	if err := model2vec.Write(modelDir, model2vec.Spec{Tokens: tokens, Rows: rows, Normalize: true}); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "mem.db")
	st, err := backends.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"deploys on tuesday", "invoices in postgres", "nothing known here"} {
		if err := st.AddMemory(t.Context(), &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	_ = st.Close()

	for i, want := range []string{"reembed tiny-model: done, 3 of 3", "reembed tiny-model: done, 3 of 3"} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"reembed", "--db", db, "--embeddings-model-dir", modelDir, "--log-level", "warn"}, nil, &out, &errOut)
		if code != 0 || !strings.Contains(out.String(), want) {
			t.Fatalf("run %d: exit %d, output %q, stderr %q; want %q", i, code, out.String(), errOut.String(), want)
		}
	}

	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"reembed", "--db", db}, nil, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "no embeddings provider") {
		t.Errorf("without a provider: exit %d, stderr %q", code, errOut.String())
	}
}
