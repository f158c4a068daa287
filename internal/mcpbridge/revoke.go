package mcpbridge

import (
	"context"
	"log/slog"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
)

// EndRevoked ends the conversations of callers the auth policy no longer
// admits, after the auth file changed (docs/OPERATIONS.md "Reloading"):
// every session of this replica whose latest caller admits refuses (its
// event streams close, it is deleted from the shared registry, and its next
// request is 401 or 404), and every subscriptions/listen stream opened by
// such a caller (answered, as when the server ends a subscription). Calls
// of a revoked session that are running finish: they were admitted by the
// policy in force when they began. It returns how many sessions and streams
// it ended. Each replica checks its own sessions when its own auth file
// changes.
func (b *Bridge) EndRevoked(admits func(*auth.Principal) bool) (sessions, listeners int) {
	var revoked []*peer
	b.sessions.each(func(p *peer) {
		if pr := p.principal.Load(); pr != nil && !admits(pr) {
			revoked = append(revoked, p)
		}
	})
	for _, p := range revoked {
		p.spare.Store(true)
		if b.cfg.Sessions != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := b.cfg.Sessions.Delete(ctx, p.id, p.owner); err != nil {
				b.log.Warn("mcp session registry", slog.String("op", "delete"), slog.String("error", err.Error()))
			}
			cancel()
		}
		b.sessions.forget(p.id)
	}
	listeners = b.listeners.endWhere(func(l *listener) bool { return l.principal != nil && !admits(l.principal) })
	if len(revoked) > 0 || listeners > 0 {
		b.log.Info("auth policy changed: ended the conversations of revoked credentials",
			slog.Int("sessions", len(revoked)), slog.Int("listen_streams", listeners))
	}
	return len(revoked), listeners
}
