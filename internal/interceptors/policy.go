package interceptors

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors/auth"
)

// policy is the tool contract's gate, in this order: a tenant is present; the
// caller holds every permission of the tool (a tool one may not call is one
// one may not see, so it answers NOT_FOUND exactly as a missing tool does);
// read-only principals never reach side-effecting tools (FORBIDDEN); a
// deprecated tool past its removal date is gone, naming its replacement.
// Rate limits follow in their own step.
func policy(now func() time.Time) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := CallFrom(ctx)
		t, p := c.Tool, c.Principal
		deny := func(reason string, err error) (any, error) {
			c.Decision, c.Reason = "deny", reason
			return nil, err
		}
		if t != nil && !Visible(p, t) {
			// The caller is told nothing more than for a missing tool;
			// the audit record and the log line name what was missing.
			return deny("missing permission "+strings.Join(MissingPermissions(p, t), " "), toolerr.UnknownTool(t.Name))
		}
		if c.pending != nil {
			if t == nil {
				return deny("unknown tool", c.pending)
			}
			return nil, c.pending
		}
		if t == nil {
			return next(ctx, req)
		}
		if t.TenantScoped && p.Tenant == "" {
			return deny("no tenant", toolerr.New(toolerr.Forbidden, "the credential carries no tenant"))
		}
		if p.ReadOnly && (t.Spec.GetSideEffect() || t.Spec.GetDestructive()) {
			return deny("read-only principal", toolerr.New(toolerr.Forbidden,
				"tool %q changes state and this credential is read-only", t.Name))
		}
		if t.Removed(now()) {
			d := t.Spec.GetDeprecated()
			return deny("removed", toolerr.New(toolerr.NotFound, "tool %q was removed on %s; use %q instead",
				t.Name, d.GetRemovalDate(), d.GetReplacement()).
				WithDetails(map[string]any{"tool": t.Name, "replacement": d.GetReplacement(), "removalDate": d.GetRemovalDate()}))
		}
		c.Decision, c.Reason = "allow", "policy passed"
		ctx = callctx.WithAdmission(ctx, &callctx.Admission{Tool: t.Name, Version: t.Version, Permissions: t.Spec.GetPermissions()})
		return next(ctx, req)
	}
}

// MissingPermissions returns the permissions of t that p does not hold
// (all of them for no principal), in the tool's order.
func MissingPermissions(p *auth.Principal, t *registry.Tool) []string {
	var out []string
	for _, perm := range t.Spec.GetPermissions() {
		if p == nil || !p.Allows(perm) {
			out = append(out, perm)
		}
	}
	return out
}

// Visible reports whether p may see (and so call) t: it holds every
// permission the tool declares. Listings on every transport use it.
func Visible(p *auth.Principal, t *registry.Tool) bool {
	if p == nil {
		return false
	}
	for _, perm := range t.Spec.GetPermissions() {
		if !p.Allows(perm) {
			return false
		}
	}
	return true
}
