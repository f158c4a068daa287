package interceptors

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/auditlog"
)

// Reasons of calls refused for the audit trail's sake.
const (
	reasonAuditUnavailable = "audit_unavailable"
	reasonAuditBusy        = "audit_busy"
)

// auditRetryAfter is the retry hint of a call refused for the audit
// trail's sake.
const auditRetryAfter = time.Second

// errAuditUnavailable is the refusal of a call that cannot be audited.
func errAuditUnavailable(cause error, applied bool) *toolerr.Error {
	msg := "the audit trail is unavailable, so the call was not served; retry later"
	reason := reasonAuditUnavailable
	if errors.Is(cause, auditlog.ErrBusy) {
		msg, reason = "the audit trail is overloaded, so the call was not served; retry later", reasonAuditBusy
	}
	if applied {
		msg = "the call's effect may have been applied but its audit record could not be written; retry later"
	}
	e := toolerr.Wrap(cause, toolerr.ProviderError, "%s", msg).WithDetails(map[string]any{"reason": reason})
	e.RetryAfter = auditRetryAfter
	return e
}

// auditGate refuses a call before it can have any effect when it could not
// be audited: under auditlog.FailClosed while the audit store fails (the refusal's
// own record probes the store, so the gate opens with the first write that
// succeeds), and under either policy while the queue is nearly full, after
// a bounded wait for room. It sits after policy, so denials stay what they
// are, and before the rate limit, so refused calls spend no budget.
func auditGate(a *auditlog.Writer) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := callFrom(ctx)
		if c == nil || c.Tool == nil {
			return next(ctx, req)
		}
		if a.Policy() == auditlog.FailClosed && a.Failing() {
			c.Decision, c.Reason = "deny", reasonAuditUnavailable
			return nil, errAuditUnavailable(nil, false)
		}
		if a.Busy() {
			if !a.WaitRoom(ctx) {
				c.Decision, c.Reason = "deny", reasonAuditBusy
				return nil, errAuditUnavailable(auditlog.ErrBusy, false)
			}
		}
		return next(ctx, req)
	}
}

// sideEffect reports whether the call's record must be durable before it
// is answered: a tool whose definition is not read-only that the chain let
// through to its handler.
func (c *call) sideEffect() bool {
	return c.Tool != nil && !c.Tool.Spec.GetReadOnly() && (c.Decision == "allow" || c.Decision == "error")
}

// audit records every allow and every deny of a tool call: tool, version,
// subject, tenant, trace id, decision, reason, code and latency — never
// inputs or secrets. A call with side effects is answered only once its
// record is durable; when it cannot be, auditlog.FailClosed answers a
// retryable error instead of the result, auditlog.FailOpen the result,
// counted and logged.
func audit(a *auditlog.Writer, m *Metrics, logger *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		resp, err := next(ctx, req)
		c := callFrom(ctx)
		name, version := c.unknownTool, ""
		if c.Tool != nil {
			name, version = c.Tool.Name, c.Tool.Version
		}
		// Not tools (listings, health) are not audited; nor are failed
		// authentications, which are counted and logged at a bounded rate
		// by the auth step instead, so that an unauthenticated flood cannot
		// fill the audit store.
		if name == "" || c.Principal == nil {
			return resp, err
		}
		code := "OK"
		if err != nil {
			code = string(toolerr.Classify(err).Code)
		}
		decision, reason := c.Decision, c.Reason
		switch {
		case decision == "" && err != nil:
			decision, reason = "deny", code
		case decision == "allow" && err != nil:
			decision, reason = "error", code
		}
		c.Decision, c.Reason = decision, reason
		e := &store.AuditEvent{
			At: c.Facts.Start.UTC(), Tool: name, ToolVersion: version, TraceID: c.Facts.TraceID,
			CorrelationID: c.Facts.CorrelationID, Transport: c.Facts.Transport, Decision: decision, Reason: reason,
			Code: code, LatencyMs: float64(time.Since(c.Facts.Start).Microseconds()) / 1000,
		}
		e.Subject, e.Tenant = c.Principal.Subject, c.Principal.Tenant
		if !c.sideEffect() {
			if rerr := a.Record(e); rerr != nil && err == nil && a.Policy() == auditlog.FailClosed {
				return nil, errAuditUnavailable(rerr, false)
			}
			return resp, err
		}
		cerr := a.Commit(e)
		if cerr == nil || err != nil {
			return resp, err
		}
		if a.Policy() == auditlog.FailOpen {
			m.auditUnaudited.Inc()
			logger.Error("call answered without a durable audit record (--audit-failure=open)",
				slog.String("tool", name), slog.String("subject", e.Subject), slog.String("tenant", e.Tenant),
				slog.String("trace_id", e.TraceID), slog.String("error", cerr.Error()))
			return resp, err
		}
		return nil, errAuditUnavailable(cerr, true)
	}
}
