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
// audit, on the configured store and knowledge directory.
func Builtin(_ context.Context, d Deps) ([]registry.Service, func(), error) {
	dir, err := knowledgetools.OpenDir(d.Config.KnowledgeDir)
	if err != nil {
		return nil, nil, err
	}
	for _, le := range dir.LoadErrors() {
		d.Logger.Warn("knowledge item not loaded", slog.String("path", le.Path), slog.String("reason", le.Reason))
	}
	var memOpts []memorytools.Option
	memOpts = append(memOpts, memorytools.WithLogger(d.Logger))
	switch {
	case d.Config.EmbeddingsURL != "" && d.Config.EmbeddingsModelDir != "":
		return nil, nil, errors.New("embeddings: set --embeddings-url or --embeddings-model-dir, not both")
	case d.Config.EmbeddingsModelDir != "":
		m, err := model2vec.Load(d.Config.EmbeddingsModelDir, "")
		if err != nil {
			return nil, nil, err
		}
		d.Logger.Info("embeddings: offline model loaded", slog.String("model", m.Name()), slog.Int("dim", m.Dim()))
		memOpts = append(memOpts, memorytools.WithEmbedder(m))
	case d.Config.EmbeddingsURL != "":
		e, err := memorytools.NewHTTPEmbedder(memorytools.HTTPEmbedderConfig{URL: d.Config.EmbeddingsURL, Model: d.Config.EmbeddingsModel})
		if err != nil {
			return nil, nil, err
		}
		memOpts = append(memOpts, memorytools.WithEmbedder(e))
	}
	// The one table of in-tree services is package intree.
	return []registry.Service{
		intree.Memory(memorytools.New(d.Store, memOpts...)),
		intree.Knowledge(knowledgetools.New(dir, d.Store)),
		intree.Sync(synctools.New(dir, d.Store)),
		intree.Audit(audittools.New(d.Store)),
	}, nil, nil
}
