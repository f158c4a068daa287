package server

import (
	"context"
	"log/slog"

	"github.com/toolsvc/toolsvc/internal/store"
)

// keepAudit starts pruning the audit trail in the background when
// --audit-retention is set; it stops (and is waited for) at Close, before
// the store closes.
func (s *Server) keepAudit(st any) {
	p, ok := st.(store.AuditPruner)
	if s.cfg.AuditRetention <= 0 || !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		store.KeepAudit(ctx, p, s.cfg.AuditRetention, s.logger)
	}()
	s.logger.Info("audit retention on", slog.Duration("retention", s.cfg.AuditRetention),
		slog.Duration("every", store.PruneAuditEvery(s.cfg.AuditRetention)))
	s.closers = append(s.closers, func() { cancel(); <-done })
}
