package upstream

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
)

// AuditToolTokenExchange is the tool name of the audit record of a token
// exchange: one record per exchange made (a cached token makes none),
// under the caller's tenant and subject, with transport "upstream <name>"
// (docs/OPERATIONS.md, "Token exchange"). It never holds a token.
const AuditToolTokenExchange = "token-exchange"

// auditExchange records one token exchange for upstream u.
func (u *Upstream) auditExchange(ctx context.Context, tenant, subject string, ttl time.Duration, err error, took time.Duration) {
	if u.set == nil || u.set.auditor == nil {
		return
	}
	e := &store.AuditEvent{At: time.Now().UTC(), Tool: AuditToolTokenExchange, Subject: subject, Tenant: tenant,
		Transport: "upstream " + u.cfg.Name, Decision: store.DecisionAllow, Code: "OK",
		Reason:    fmt.Sprintf("token exchanged at the authorization server of upstream %s (valid %s)", u.cfg.Name, ttl),
		LatencyMs: float64(took.Microseconds()) / 1000}
	if f := callctx.From(ctx); f != nil {
		e.TraceID, e.CorrelationID = f.TraceID, f.CorrelationID
	}
	if err != nil {
		// The error's message is the one callers see: it holds the
		// server's OAuth error code at most, never a token.
		e.Decision, e.Code, e.Reason = store.DecisionError, string(toolerr.ProviderError), "token exchange failed: "+err.Error()
		if te, ok := toolerr.As(err); ok {
			e.Code, e.Reason = string(te.Code), te.Message
			if te.Code == toolerr.Unauthorized {
				e.Decision = store.DecisionDeny
			}
		}
	}
	if aerr := u.set.auditor.AppendAudit(context.WithoutCancel(ctx), e); aerr != nil && u.logger != nil {
		u.logger.Error("token exchange not audited", slog.String("upstream", u.cfg.Name), slog.String("error", aerr.Error()))
	}
}
