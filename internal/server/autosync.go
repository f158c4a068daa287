package server

import (
	"context"
	"log/slog"
	"time"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/base/periodic"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
	"github.com/toolsvc/toolsvc/internal/tools/knowledgesync"
)

// autoSync adds the job that runs sync-knowledge for every tenant of the
// knowledge set every Config.SyncInterval (--sync-interval; 0, the
// default, never), through the same code a caller's sync-knowledge runs,
// as the system actor knowledgesync.SystemActor: each run is audited under
// that subject with the transport "internal", never as a user.
func autoSync(d Deps, dir *knowledge.Dir, svc *knowledgesync.Service) {
	interval := d.Config.SyncInterval
	if interval <= 0 {
		return
	}
	d.Jobs.Go("automatic knowledge sync", func(ctx context.Context) {
		d.Logger.Info("automatic knowledge sync on", slog.String("every", interval.String()), slog.String("actor", knowledgesync.SystemActor))
		periodic.Run(ctx, interval, func(ctx context.Context) {
			for _, tenant := range syncTenants(dir.Library()) {
				syncTenant(ctx, d, svc, tenant)
			}
		})
	})
}

// syncTenants are the tenants the automatic sync syncs: those with
// knowledge, or in development mode its one tenant, which is served every
// item.
func syncTenants(lib *kb.Library) []string {
	if lib.Development() {
		return []string{auth.DevelopmentTenant}
	}
	return lib.Tenants()
}

// syncTenant runs one automatic sync of tenant and audits it.
func syncTenant(ctx context.Context, d Deps, svc *knowledgesync.Service, tenant string) {
	start := time.Now()
	resp, err := svc.SyncKnowledge(knowledgesync.AsSystem(ctx, tenant), &syncv1.SyncKnowledgeRequest{})
	ev := &store.AuditEvent{
		At: start.UTC(), Tool: "sync-knowledge", Subject: knowledgesync.SystemActor, Tenant: tenant, Transport: "internal",
		Decision: store.DecisionAllow, Code: "OK", LatencyMs: float64(time.Since(start).Microseconds()) / 1000,
	}
	if err != nil {
		te := toolerr.Classify(err)
		ev.Decision, ev.Code, ev.Reason = store.DecisionError, string(te.Code), te.Message
		d.Logger.Warn("automatic knowledge sync failed", slog.String("tenant", tenant), slog.String("code", ev.Code),
			slog.String("error", err.Error()))
	} else {
		r := resp.GetData().GetResult()
		d.Logger.Info("automatic knowledge sync", slog.String("tenant", tenant), slog.Uint64("added", uint64(r.GetAdded())),
			slog.Uint64("updated", uint64(r.GetUpdated())), slog.Uint64("removed", uint64(r.GetDeleted())),
			slog.Uint64("failures", uint64(r.GetFailures())))
	}
	if aerr := d.Store.AppendAudit(context.WithoutCancel(ctx), ev); aerr != nil {
		d.Logger.Error("automatic knowledge sync not audited", slog.String("tenant", tenant), slog.String("error", aerr.Error()))
	}
}
