package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/periodic"
)

// auditPruneBatch bounds the events one pruning transaction deletes, so
// that pruning never holds the writer (SQLite's only one) for long.
const auditPruneBatch = 1000

// auditPrunePause is the pause between two batches of one pruning pass,
// which lets the calls' own writes in between.
const auditPrunePause = 20 * time.Millisecond

// PruneAuditEvery is how often KeepAudit prunes for retention: a quarter
// of it, between 100 ms and a minute.
func PruneAuditEvery(retention time.Duration) time.Duration {
	return min(max(retention/4, 100*time.Millisecond), time.Minute)
}

// KeepAudit prunes the audit events older than retention from p, now and
// then every PruneAuditEvery(retention), in batches of auditPruneBatch,
// until ctx ends. A failed pass is logged and retried at the next tick.
func KeepAudit(ctx context.Context, p AuditPruner, retention time.Duration, logger *slog.Logger) {
	periodic.Run(ctx, PruneAuditEvery(retention), func(ctx context.Context) {
		n, err := PruneAuditOnce(ctx, p, time.Now().Add(-retention))
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Error("audit retention: pruning failed", slog.Int("deleted", n), slog.String("error", err.Error()))
		case n > 0:
			logger.Info("audit retention: pruned old records", slog.Int("deleted", n), slog.String("retention", retention.String()))
		}
	}, periodic.Now())
}

// PruneAuditOnce deletes every audit event older than before, in batches
// of auditPruneBatch, and returns how many it deleted.
func PruneAuditOnce(ctx context.Context, p AuditPruner, before time.Time) (int, error) {
	total := 0
	for {
		n, err := p.PruneAudit(ctx, before, auditPruneBatch)
		total += n
		if err != nil || n < auditPruneBatch {
			return total, err
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(auditPrunePause):
		}
	}
}
