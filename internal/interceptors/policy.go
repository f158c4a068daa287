package interceptors

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// The rules of the policy, the first word of every denial's audit reason
// ("permission: missing memory:write") and what explain names
// (docs/OPERATIONS.md, "Explain").
const (
	// RuleToolSet: the tool is outside the caller's tool sets, or the
	// caller asked for a set it may not use.
	RuleToolSet = "tool_set"
	// RulePermission: the caller lacks a permission the tool declares.
	RulePermission = "permission"
	// RuleTenant: the tool is tenant-scoped and the credential has no tenant.
	RuleTenant = "tenant"
	// RuleReadOnly: a read-only credential and a tool that changes state.
	RuleReadOnly = "read_only"
	// RuleRemoved: a deprecated tool past its removal date.
	RuleRemoved = "removed"
	// RuleUnknownTool: no such tool.
	RuleUnknownTool = "unknown_tool"
)

// Verdict is the policy's answer for one principal and tool: allowed, or
// the rule that refuses and the error the caller gets.
type Verdict struct {
	// Allowed is true when no rule refuses.
	Allowed bool
	// Rule is the refusing rule (Rule* constants); empty when allowed.
	Rule string
	// Reason is what the audit record says: "rule: detail".
	Reason string
	// Err is the caller's error; nil when allowed.
	Err error
}

// Decide applies the policy's rules to p calling t at now, in the chain's
// order: tool set, permissions (both answer as an unknown tool: a tool one
// may not see is one that is not there), tenant, read-only, removal. The
// chain's policy step and explain both ask it, so they cannot disagree.
func Decide(p *auth.Principal, t *registry.Tool, now time.Time) Verdict {
	deny := func(rule, detail string, err error) Verdict {
		return Verdict{Rule: rule, Reason: rule + ": " + detail, Err: err}
	}
	if p != nil && !InView(p, t) {
		return deny(RuleToolSet, "not in tool set "+quoteNames(p.View.Names()), toolerr.UnknownTool(t.Name))
	}
	if missing := MissingPermissions(p, t); len(missing) > 0 {
		// The caller is told nothing more than for a missing tool; the
		// audit record and the log line name what was missing.
		return deny(RulePermission, "missing "+strings.Join(missing, " "), toolerr.UnknownTool(t.Name))
	}
	if t.TenantScoped && p.Tenant == "" {
		return deny(RuleTenant, "the credential carries no tenant", toolerr.New(toolerr.Forbidden, "the credential carries no tenant"))
	}
	if p.ReadOnly && (t.Spec.GetSideEffect() || t.Spec.GetDestructive()) {
		return deny(RuleReadOnly, "read-only principal and a tool that changes state", toolerr.New(toolerr.Forbidden,
			"tool %q changes state and this credential is read-only", t.Name))
	}
	if t.Removed(now) {
		d := t.Spec.GetDeprecated()
		return deny(RuleRemoved, "removed on "+d.GetRemovalDate(), toolerr.New(toolerr.NotFound, "tool %q was removed on %s; use %q instead",
			t.Name, d.GetRemovalDate(), d.GetReplacement()).
			WithDetails(map[string]any{"tool": t.Name, "replacement": d.GetReplacement(), "removalDate": d.GetRemovalDate()}))
	}
	return Verdict{Allowed: true}
}

func quoteNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = `"` + n + `"`
	}
	return strings.Join(q, ", ")
}

// policy is the tool contract's gate: Decide's rules, then resolve's
// pending errors (an unknown tool, bad arguments). Rate limits follow in
// their own step.
func policy(now func() time.Time) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := callFrom(ctx)
		t, p := c.Tool, c.Principal
		if t != nil && !Visible(p, t) {
			v := Decide(p, t, now())
			c.Decision, c.Reason = "deny", v.Reason
			return nil, v.Err
		}
		if c.pending != nil {
			if t == nil {
				c.Decision, c.Reason = "deny", RuleUnknownTool+": no such tool"
			}
			return nil, c.pending
		}
		if t == nil {
			return next(ctx, req)
		}
		if v := Decide(p, t, now()); !v.Allowed {
			c.Decision, c.Reason = "deny", v.Reason
			return nil, v.Err
		}
		c.Decision, c.Reason = "allow", "policy passed"
		adm := &callctx.Admission{Tool: t.Name, Version: t.Version, Permissions: t.Spec.GetPermissions()}
		if c.Generic { // ToolService.CallTool answers with the tool's typed call
			adm.Run = func(ctx context.Context) (any, error) { return t.Call(ctx, c.Request) }
		}
		ctx = callctx.WithAdmission(ctx, adm)
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

// Facts are what a tool set selects t on.
func Facts(t *registry.Tool) auth.ToolFacts {
	return auth.ToolFacts{Name: t.Name, Version: t.Version, Category: t.Spec.GetCategory(), Tags: t.Spec.GetTags()}
}

// InView reports whether t is in p's tool sets (always, for a principal
// bound to none that chose none).
func InView(p *auth.Principal, t *registry.Tool) bool {
	return p != nil && (p.View == nil || p.View.Contains(Facts(t)))
}

// Visible reports whether p may see (and so call) t: t is in p's tool sets
// and p holds every permission the tool declares. Listings on every
// transport use it.
func Visible(p *auth.Principal, t *registry.Tool) bool {
	if p == nil || !InView(p, t) {
		return false
	}
	for _, perm := range t.Spec.GetPermissions() {
		if !p.Allows(perm) {
			return false
		}
	}
	return true
}
