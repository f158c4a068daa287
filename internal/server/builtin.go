package server

import (
	"context"
	"errors"
	"log/slog"

	"github.com/toolsvc/toolsvc/internal/embed/model2vec"
	"github.com/toolsvc/toolsvc/internal/intree"
	"github.com/toolsvc/toolsvc/internal/registry"
	audittools "github.com/toolsvc/toolsvc/internal/tools/audit"
	knowledgetools "github.com/toolsvc/toolsvc/internal/tools/knowledge"
	memorytools "github.com/toolsvc/toolsvc/internal/tools/memory"
	synctools "github.com/toolsvc/toolsvc/internal/tools/sync"
)

// Builtin builds toolsvc's own tool suite: memory, knowledge, sync and
// audit, on the configured store and knowledge directory. With an
// embeddings provider it starts the memory vector index (rebuilt from the
// store, then kept filled in the background); the returned cleanup stops
// it.
func Builtin(_ context.Context, d Deps) ([]registry.Service, func(), error) {
	dir, err := knowledgetools.OpenDir(d.Config.KnowledgeDir)
	if err != nil {
		return nil, nil, err
	}
	for _, le := range dir.LoadErrors() {
		d.Logger.Warn("knowledge item not loaded", slog.String("path", le.Path), slog.String("reason", le.Reason))
	}
	emb, err := Embedder(d.Config, d.Logger)
	if err != nil {
		return nil, nil, err
	}
	memOpts := []memorytools.Option{memorytools.WithLogger(d.Logger)}
	if emb != nil {
		memOpts = append(memOpts, memorytools.WithEmbedder(emb))
	}
	mem := memorytools.New(d.Store, memOpts...)
	cleanup := func() {}
	if emb != nil {
		// The index lives as long as the service: cleanup ends it.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); mem.RunVectors(ctx) }()
		cleanup = func() { cancel(); <-done }
	}
	// The one table of in-tree services is package intree.
	return []registry.Service{
		intree.Memory(mem),
		intree.Knowledge(knowledgetools.New(dir, d.Store)),
		intree.Sync(synctools.New(dir, d.Store)),
		intree.Audit(audittools.New(d.Store)),
	}, cleanup, nil
}

// Embedder returns the configured embeddings provider: the offline
// model2vec model (--embeddings-model-dir), the OpenAI-compatible endpoint
// (--embeddings-url), or nil for none.
func Embedder(cfg *Config, logger *slog.Logger) (memorytools.Embedder, error) {
	switch {
	case cfg.EmbeddingsURL != "" && cfg.EmbeddingsModelDir != "":
		return nil, errors.New("embeddings: set --embeddings-url or --embeddings-model-dir, not both")
	case cfg.EmbeddingsModelDir != "":
		m, err := model2vec.Load(cfg.EmbeddingsModelDir, "")
		if err != nil {
			return nil, err
		}
		logger.Info("embeddings: offline model loaded", slog.String("model", m.Name()), slog.Int("dim", m.Dim()))
		return m, nil
	case cfg.EmbeddingsURL != "":
		e, err := memorytools.NewHTTPEmbedder(memorytools.HTTPEmbedderConfig{URL: cfg.EmbeddingsURL, Model: cfg.EmbeddingsModel})
		if err != nil {
			return nil, err
		}
		return e, nil
	}
	return nil, nil
}
