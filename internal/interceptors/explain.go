package interceptors

import (
	"context"
	"slices"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// RuleBudget refuses when a budget of the caller is spent (explain asks the
// BudgetExplainer).
const RuleBudget = "budget"

// BudgetAnswer is one budget that applies to a caller and a tool, as
// explain reports it.
type BudgetAnswer struct {
	// Name names the budget as the operator configured it.
	Name string `json:"name"`
	// Limit and Remaining are units per window.
	Limit     int64 `json:"limit"`
	Remaining int64 `json:"remaining"`
	// Window is the budget's window, e.g. "24h0m0s".
	Window string `json:"window,omitempty"`
	// Refuses is true when the next call of the tool would be refused.
	Refuses bool `json:"refuses"`
}

// BudgetExplainer answers the budget part of explain: the budgets of p
// (for the tool t when not nil). Explain works without one (no budgets).
type BudgetExplainer interface {
	ExplainBudgets(ctx context.Context, p *auth.Principal, t *registry.Tool) []BudgetAnswer
}

// ExplainedCaller is who explain answers for.
type ExplainedCaller struct {
	// Entry is where the caller is in the auth file ("api_keys[2]"), or
	// "jwt" for a caller described by token claims, or "self".
	Entry       string   `json:"entry"`
	Subject     string   `json:"subject"`
	Tenant      string   `json:"tenant"`
	Method      string   `json:"method"`
	Roles       []string `json:"roles"`
	Permissions []string `json:"permissions"`
	// ToolSets are the sets the credential and its roles are bound to.
	ToolSets []string `json:"toolSets"`
	// View is the sets the caller sees now (its chosen one, or its
	// bound ones); empty: every tool.
	View     []string `json:"view"`
	ReadOnly bool     `json:"readOnly"`
}

// ToolAnswer is explain's answer for one tool: may the caller call it,
// and if not which rule refuses it.
type ToolAnswer struct {
	Tool    string `json:"tool"`
	Version string `json:"version,omitempty"`
	Allowed bool   `json:"allowed"`
	// Rule and Reason are those the chain writes in the denial's audit
	// record; Code is the caller's error code.
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
	Code   string `json:"code,omitempty"`
	// GrantedBy lists, for a missing permission, the roles of the auth
	// file that would grant it.
	GrantedBy []string `json:"grantedBy,omitempty"`
}

// SeenTool is a tool the caller sees.
type SeenTool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Explanation is explain's answer for one caller (docs/OPERATIONS.md,
// "Explain").
type Explanation struct {
	Caller ExplainedCaller `json:"caller"`
	// Tool answers for the tool asked about; nil when none was.
	Tool *ToolAnswer `json:"tool,omitempty"`
	// Sees is every tool (latest versions) the caller may see and call.
	Sees []SeenTool `json:"sees"`
	// Budgets are the caller's budgets; empty without budgets.
	Budgets []BudgetAnswer `json:"budgets"`
}

// ExplainRequest is what explain is asked.
type ExplainRequest struct {
	// Entry labels the caller in the answer.
	Entry string
	// Principal is the caller, its roles granted and its view set (see
	// auth.Authenticator.SelectToolSet).
	Principal *auth.Principal
	// Tool and Version name the tool to answer for; empty Tool: none.
	Tool, Version string
	// SetError is the refusal of the tool set the request asked for, if
	// any: every tool then answers with it.
	SetError *auth.ToolSetError
}

// Explain answers req from the live policy a (roles, tool sets), the
// registry reg and budgets (nil: none), with the same rules the chain
// applies (Decide), so that its answer is the chain's decision.
func Explain(ctx context.Context, a *auth.Authenticator, reg *registry.Registry, budgets BudgetExplainer, req ExplainRequest, now time.Time) Explanation {
	p := req.Principal
	ex := Explanation{Caller: ExplainedCaller{Entry: req.Entry, Subject: p.Subject, Tenant: p.Tenant, Method: p.Method,
		Roles: nonNil(p.Roles), Permissions: nonNil(p.Permissions), ToolSets: nonNil(p.ToolSets), View: nonNil(p.View.Names()), ReadOnly: p.ReadOnly},
		Sees: []SeenTool{}, Budgets: []BudgetAnswer{}}
	if req.SetError == nil {
		for _, t := range reg.Latest() {
			if Visible(p, t) {
				ex.Sees = append(ex.Sees, SeenTool{Name: t.Name, Version: t.Version})
			}
		}
	}
	var tool *registry.Tool
	if req.Tool != "" {
		ans := &ToolAnswer{Tool: req.Tool, Version: req.Version}
		ex.Tool = ans
		t, err := reg.Get(req.Tool, req.Version)
		switch {
		case req.SetError != nil:
			ans.Rule, ans.Reason, ans.Code = RuleToolSet, RuleToolSet+": "+req.SetError.Rule+" \""+req.SetError.Set+"\"", string(toolerr.NotFound)
		case err != nil:
			ans.Rule, ans.Reason, ans.Code = RuleUnknownTool, RuleUnknownTool+": no such tool", string(toolerr.NotFound)
		default:
			tool = t
			ans.Version = t.Version
			v := Decide(p, t, now)
			ans.Allowed, ans.Rule, ans.Reason = v.Allowed, v.Rule, v.Reason
			if !v.Allowed {
				ans.Code = string(toolerr.Classify(v.Err).Code)
			}
			if v.Rule == RulePermission {
				for _, perm := range MissingPermissions(p, t) {
					for _, r := range a.RolesGranting(perm) {
						if !slices.Contains(ans.GrantedBy, r) {
							ans.GrantedBy = append(ans.GrantedBy, r)
						}
					}
				}
			}
		}
	}
	if budgets != nil {
		ex.Budgets = append(ex.Budgets, budgets.ExplainBudgets(ctx, p, tool)...)
		if ex.Tool != nil && ex.Tool.Allowed {
			for _, b := range ex.Budgets {
				if b.Refuses {
					ex.Tool.Allowed, ex.Tool.Rule, ex.Tool.Code = false, RuleBudget, string(toolerr.RateLimited)
					ex.Tool.Reason = RuleBudget + ": " + b.Name + " spent"
					break
				}
			}
		}
	}
	return ex
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
