package baselines

import (
	"context"
	"io"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/backends"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
	"github.com/toolsvc/toolsvc/internal/tools/knowledgesync"
)

// SyncStatusMethod is the full gRPC method of get-sync-status, served by
// toolsvc and by the same-work baseline alike.
const SyncStatusMethod = syncv1.SyncService_GetSyncStatus_FullMethodName

// SyncStatusTenant is the tenant whose sync status the same-work baseline
// reports; the load tool's API keys belong to it too.
const SyncStatusTenant = "bench"

// OpenSyncStatusStore opens the store at dsn exactly as `toolsvc serve`
// does (internal/store/backends: same pragmas, pool sizes and migrations) and
// seeds it with SeedSyncStatus.
func OpenSyncStatusStore(ctx context.Context, dsn string) (store.Store, error) {
	st, err := backends.Open(ctx, dsn, store.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		return nil, err
	}
	if err := SeedSyncStatus(ctx, st, SyncStatusTenant); err != nil {
		_ = st.Close()
		return nil, err
	}
	return st, nil
}

// SeedSyncStatus records one clean sync run of tenant an hour ago, so that
// get-sync-status reads a run and reports healthy. The benchmark seeds
// toolsvc's store and the baseline's with it, so both do the same work.
func SeedSyncStatus(ctx context.Context, st store.SyncStore, tenant string) error {
	return st.RecordSyncRun(ctx, &store.SyncRun{Tenant: tenant, StartedAt: time.Now().Add(-time.Hour),
		DurationMs: 1200, Added: 12, Updated: 3, Unchanged: 40})
}

// SyncStatusTool is the product's sync tools (internal/tools/knowledgesync) on st
// and, when knowledgeDir is not empty, on that knowledge directory loaded
// for SyncStatusTenant as `toolsvc serve --knowledge-dir` with the load
// tool's auth file loads it: get-sync-status then reports the knowledge set
// and the changes pending on disk, as toolsvc's does in the same run.
func SyncStatusTool(st store.Store, knowledgeDir string) (*knowledgesync.Service, error) {
	if knowledgeDir == "" {
		return knowledgesync.New(nil, st), nil
	}
	dir, err := knowledge.OpenDir(knowledgeDir, kb.LibraryOptions{Tenants: []string{SyncStatusTenant}})
	if err != nil {
		return nil, err
	}
	return knowledgesync.New(dir, st), nil
}

// NewSyncStatusServer returns a bare grpc-go server, with default options
// and no interceptors, serving tool (SyncStatusTool). The only thing it
// adds is the caller's tenant (SyncStatusTenant), which the chain would
// take from the API key.
func NewSyncStatusServer(tool *knowledgesync.Service) *grpc.Server {
	s := grpc.NewServer()
	syncv1.RegisterSyncServiceServer(s, tenantSync{tool: tool})
	return s
}

// tenantSync serves get-sync-status as a caller of SyncStatusTenant; the
// baseline measures only that query, so sync-knowledge is unimplemented.
type tenantSync struct {
	syncv1.UnimplementedSyncServiceServer
	tool *knowledgesync.Service
}

func (s tenantSync) GetSyncStatus(ctx context.Context, req *syncv1.GetSyncStatusRequest) (*syncv1.GetSyncStatusResponse, error) {
	return s.tool.GetSyncStatus(knowledgesync.WithTenant(ctx, SyncStatusTenant), req)
}
