package server

import (
	"context"
	"errors"
	"log/slog"

	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/embed/model2vec"
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
	return []registry.Service{
		{Desc: &memoryv1.MemoryService_ServiceDesc, Impl: memorytools.New(d.Store, memOpts...)},
		{Desc: &knowledgev1.KnowledgeService_ServiceDesc, Impl: knowledgetools.New(dir, d.Store)},
		{Desc: &syncv1.SyncService_ServiceDesc, Impl: synctools.New(dir, d.Store)},
		{Desc: &auditv1.AuditService_ServiceDesc, Impl: audittools.New(d.Store)},
	}, nil, nil
}
