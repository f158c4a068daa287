package server

import (
	"context"
	"log/slog"

	"github.com/toolsvc/toolsvc/internal/store"
)

// keepAudit adds the job pruning the audit trail when --audit-retention
// is set; Run starts it, and stops it (waiting for it) before the store
// closes.
func (s *Server) keepAudit(st any) {
	p, ok := st.(store.AuditPruner)
	if s.cfg.AuditRetention <= 0 || !ok {
		return
	}
	s.jobs.Go("audit retention", func(ctx context.Context) {
		s.logger.Info("audit retention on", slog.String("retention", s.cfg.AuditRetention.String()),
			slog.String("every", store.PruneAuditEvery(s.cfg.AuditRetention).String()))
		store.KeepAudit(ctx, p, s.cfg.AuditRetention, s.logger)
	})
}
