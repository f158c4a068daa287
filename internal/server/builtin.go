package server

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"slices"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/base/model2vec"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/tools/audit"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
	"github.com/toolsvc/toolsvc/internal/tools/knowledgesync"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
)

// Builtin builds toolsvc's own tool suite: memory, knowledge, sync and
// audit, on the configured store and knowledge directory. Its background
// work goes to d.Jobs, for Server.Run to start: the knowledge watch (a
// replica's refresh when another publishes), the automatic sync
// (--sync-interval), and with an embeddings provider the memory vector
// index (rebuilt from the store, then kept filled).
func Builtin(ctx context.Context, d Deps) ([]registry.Service, func(), error) {
	dir, err := openKnowledge(d)
	if err != nil {
		return nil, nil, err
	}
	if err := shareKnowledge(ctx, d, dir); err != nil {
		return nil, nil, err
	}
	emb, err := Embedder(d.Config, d.Logger)
	if err != nil {
		return nil, nil, err
	}
	memOpts := []memory.Option{memory.WithLogger(d.Logger), memory.WithVectorSync(d.Config.VectorSyncInterval)}
	if emb != nil {
		memOpts = append(memOpts, memory.WithEmbedder(emb))
	}
	mem := memory.New(d.Store, memOpts...)
	syncOpts := []knowledgesync.Option{knowledgesync.WithLogger(d.Logger)}
	if emb != nil {
		// Pointer memories are memories: embedded at write, as add-memory's.
		syncOpts = append(syncOpts, knowledgesync.WithMemoryEmbedder(mem))
		// The index lives as long as the service.
		d.Jobs.Go("memory vector index", mem.RunVectors)
	}
	syncSvc := knowledgesync.New(dir, d.Store, syncOpts...)
	autoSync(d, dir, syncSvc)
	kn := knowledge.Registration(knowledge.New(dir, d.Store))
	// Results of the knowledge tools are cached per knowledge set.
	kn.DataVersion = dir.Pin
	// Adding a service is a line here and one in Contracts.
	return []registry.Service{
		memory.Registration(mem),
		kn,
		knowledgesync.Registration(syncSvc),
		audit.Registration(audit.New(d.Store)),
	}, nil, nil
}

// Contracts is every in-tree service without implementations: the
// contracts alone, for a registry that describes tools it does not serve
// (tests of the transports, the schema agreement fuzz target).
func Contracts() []registry.Service {
	return []registry.Service{memory.Registration(nil), knowledge.Registration(nil), knowledgesync.Registration(nil), audit.Registration(nil)}
}

// Embedder returns the configured embeddings provider: the offline
// model2vec model (--embeddings-model-dir), the OpenAI-compatible endpoint
// (--embeddings-url), or nil for none.
func Embedder(cfg *Config, logger *slog.Logger) (memory.Embedder, error) {
	if err := cfg.embeddingsConflict(); err != nil {
		return nil, err
	}
	switch {
	case cfg.EmbeddingsModelDir != "":
		m, err := model2vec.Load(cfg.EmbeddingsModelDir, "")
		if err != nil {
			return nil, err
		}
		logger.Info("embeddings: offline model loaded", slog.String("model", m.Name()), slog.Int("dim", m.Dim()))
		return m, nil
	case cfg.EmbeddingsURL != "":
		e, err := memory.NewHTTPEmbedder(memory.HTTPEmbedderConfig{URL: cfg.EmbeddingsURL, Model: cfg.EmbeddingsModel})
		if err != nil {
			return nil, err
		}
		return e, nil
	}
	return nil, nil
}

// openKnowledge loads the knowledge directory for the deployment's
// tenants, and logs what it assumed and every file it could not serve.
func openKnowledge(d Deps) (*knowledge.Dir, error) {
	tenants, err := deploymentTenants(d.Config.AuthFile)
	if err != nil {
		return nil, err
	}
	optional := d.Config.KnowledgeDirOptional()
	dir, err := knowledge.OpenDir(d.Config.KnowledgeDir, kb.LibraryOptions{
		Tenants: tenants, CompanyWide: d.Config.KnowledgeCompanyWide, Development: d.Config.AuthFile == "",
		MissingIsEmpty: optional,
	})
	if err != nil {
		return nil, err
	}
	if optional {
		if _, err := os.Stat(d.Config.KnowledgeDir); errors.Is(err, fs.ErrNotExist) {
			d.Logger.Warn("knowledge: the default knowledge directory does not exist: no knowledge is served; "+
				"name one with --knowledge-dir", slog.String("dir", d.Config.KnowledgeDir))
		}
	}
	for _, note := range dir.Library().Notes() {
		d.Logger.Info("knowledge: "+note, slog.String("dir", d.Config.KnowledgeDir), slog.String("layout", dir.Library().Layout()))
	}
	for _, le := range dir.LoadErrors() {
		d.Logger.Warn("knowledge item not loaded", slog.String("path", le.Path), slog.String("tenant", le.Tenant), slog.String("reason", le.Reason))
	}
	return dir, nil
}

// deploymentTenants returns the tenants the deployment serves when they
// can all be named: the development tenant without an auth file, else the
// tenants of the auth file's API keys; nil when a JWT issuer names tenants
// in its tokens.
func deploymentTenants(authFile string) ([]string, error) {
	if authFile == "" {
		return []string{auth.DevelopmentTenant}, nil
	}
	ac, err := auth.LoadFile(authFile)
	if err != nil {
		return nil, err
	}
	if ac.JWT != nil {
		return nil, nil
	}
	var out []string
	for _, k := range ac.APIKeys {
		if !slices.Contains(out, k.Tenant) {
			out = append(out, k.Tenant)
		}
	}
	slices.Sort(out)
	return out, nil
}
