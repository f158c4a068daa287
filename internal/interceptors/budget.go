package interceptors

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store/budget"
)

// Budgets decides each call against the budgets of the auth file in force
// (docs/OPERATIONS.md "Budgets"): every budget that applies to the caller
// (its tenant, its credential's team, its key) must have room for the
// tool's declared cost, and then all are charged at once. A call beyond a
// budget is RATE_LIMITED with retryAfter at the end of the budget's window
// and a hint naming the budget; it is charged nothing. A call is charged
// when admitted, whatever its outcome. Budgets follow reloads of the auth
// file, as the Authenticator it reads the policy from does.
type Budgets struct {
	auth  *auth.Authenticator
	store budget.Store
	now   func() time.Time

	remaining *prometheus.Desc
	refusals  *prometheus.CounterVec

	mu   sync.Mutex
	seen map[string]map[string]bool // budget name -> whose, seen spending here (bounded)
}

// maxSeenPerBudget bounds the callers a budget remembers for the operator
// view beyond those the auth file names.
const maxSeenPerBudget = 1000

// NewBudgets counts the budgets of a's policy in st, with the metrics
// toolsvc_budget_remaining_units{budget,whose} (read from the store at
// each scrape, as the operator view is) and
// toolsvc_budget_refusals_total{budget,tenant} registered on reg (nil: not
// registered).
func NewBudgets(a *auth.Authenticator, st budget.Store, reg prometheus.Registerer) *Budgets {
	b := &Budgets{auth: a, store: st, now: time.Now, seen: map[string]map[string]bool{},
		remaining: prometheus.NewDesc("toolsvc_budget_remaining_units",
			"Units left in the current window of a budget, by budget and whose it is (tenant, team as tenant/team, key as tenant/subject), read from the budget store at each scrape.",
			[]string{"budget", "whose"}, nil),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsvc_budget_refusals_total", Help: "Calls refused because a budget was spent, by budget and tenant.",
		}, []string{"budget", "tenant"}),
	}
	if reg != nil {
		reg.MustRegister(b.refusals, remainingCollector{b})
	}
	return b
}

// remainingCollector reports the remaining units at each scrape, so that
// the calls themselves update no gauge.
type remainingCollector struct{ b *Budgets }

func (c remainingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.b.remaining }

func (c remainingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	all, err := c.b.All(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.b.remaining, err)
		return
	}
	for _, st := range all {
		ch <- prometheus.MustNewConstMetric(c.b.remaining, prometheus.GaugeValue, float64(st.Remaining), st.Name, st.Whose)
	}
}

// BudgetStatus is one budget as it applies to one caller.
type BudgetStatus struct {
	// Name is the budget's name in the auth file.
	Name string `json:"name"`
	// Per is tenant, team or key.
	Per string `json:"per"`
	// Whose is the tenant, team or tenant/subject counted.
	Whose string `json:"whose"`
	// Units is the budget per window.
	Units int64 `json:"units"`
	// Window is the window's length.
	Window string `json:"window"`
	// Used and Remaining are the units of the current window.
	Used      int64 `json:"used"`
	Remaining int64 `json:"remaining"`
	// Resets is when the current window ends.
	Resets time.Time `json:"resets"`
}

// whose is the counter owner of budget l for p, or "" when l does not
// apply to p. Only the credential's own facts count: a header cannot move
// a call to another team's budget.
func whose(l *auth.BudgetConfig, p *auth.Principal) string {
	var v string
	switch l.Per {
	case auth.BudgetPerTenant:
		v = p.Tenant
	case auth.BudgetPerTeam:
		v = p.Identifiers[auth.IdentifierTeamID]
		if v == "" {
			return ""
		}
		v = p.Tenant + "/" + v
	case auth.BudgetPerKey:
		v = p.Tenant + "/" + p.Subject
	}
	if l.Match != "" {
		switch l.Per {
		case auth.BudgetPerTenant:
			if p.Tenant != l.Match {
				return ""
			}
		case auth.BudgetPerTeam:
			if p.Identifiers[auth.IdentifierTeamID] != l.Match {
				return ""
			}
		case auth.BudgetPerKey:
			if p.Subject != l.Match {
				return ""
			}
		}
	}
	return v
}

func counterKey(l *auth.BudgetConfig, who string) string {
	return l.Name + ":" + l.Per + ":" + who
}

// applying returns the budgets of the policy in force that apply to p,
// with whose each counts.
func (b *Budgets) applying(p *auth.Principal) (*auth.BudgetsConfig, []*auth.BudgetConfig, []string) {
	cfg := b.auth.Config()
	if cfg == nil || cfg.Budgets == nil || len(cfg.Budgets.Limits) == 0 || p == nil {
		return nil, nil, nil
	}
	var ls []*auth.BudgetConfig
	var ws []string
	for i := range cfg.Budgets.Limits {
		l := &cfg.Budgets.Limits[i]
		if w := whose(l, p); w != "" {
			ls, ws = append(ls, l), append(ws, w)
		}
	}
	return cfg.Budgets, ls, ws
}

// For returns the budgets that apply to p with what is left of each, for
// the operator view and explain.
func (b *Budgets) For(ctx context.Context, p *auth.Principal) ([]BudgetStatus, error) {
	_, ls, ws := b.applying(p)
	out := make([]BudgetStatus, 0, len(ls))
	for i, l := range ls {
		st, err := b.status(ctx, l, ws[i])
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (b *Budgets) status(ctx context.Context, l *auth.BudgetConfig, who string) (BudgetStatus, error) {
	used, resets, err := b.store.Used(ctx, counterKey(l, who), l.Window)
	if err != nil {
		return BudgetStatus{}, err
	}
	rem := max(l.Units-used, 0)
	return BudgetStatus{Name: l.Name, Per: l.Per, Whose: who, Units: l.Units, Window: l.Window.String(),
		Used: used, Remaining: rem, Resets: resets.UTC()}, nil
}

// All returns every budget of the policy in force for every caller the
// auth file names (its keys' and certificates' tenants, teams and
// subjects) or that spent on this replica, for the operator view.
func (b *Budgets) All(ctx context.Context) ([]BudgetStatus, error) {
	cfg := b.auth.Config()
	if cfg == nil || cfg.Budgets == nil {
		return nil, nil
	}
	var principals []*auth.Principal
	for _, k := range cfg.APIKeys {
		principals = append(principals, &auth.Principal{Subject: k.Subject, Tenant: k.Tenant, Identifiers: k.Identifiers})
	}
	for _, k := range cfg.ClientCerts {
		principals = append(principals, &auth.Principal{Subject: k.Subject, Tenant: k.Tenant, Identifiers: k.Identifiers})
	}
	var out []BudgetStatus
	for i := range cfg.Budgets.Limits {
		l := &cfg.Budgets.Limits[i]
		whos := map[string]bool{}
		for _, p := range principals {
			if w := whose(l, p); w != "" {
				whos[w] = true
			}
		}
		b.mu.Lock()
		for w := range b.seen[l.Name] {
			whos[w] = true
		}
		b.mu.Unlock()
		keys := make([]string, 0, len(whos))
		for w := range whos {
			keys = append(keys, w)
		}
		sort.Strings(keys)
		for _, w := range keys {
			st, err := b.status(ctx, l, w)
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		}
	}
	return out, nil
}

func (b *Budgets) remember(name, who string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen[name][who] {
		return
	}
	m := b.seen[name]
	if m == nil {
		m = map[string]bool{}
		b.seen[name] = m
	}
	if len(m) < maxSeenPerBudget {
		m[who] = true
	}
}

// budgets is the chain's step; nil b admits everything.
func budgets(b *Budgets) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		if b == nil {
			return next(ctx, req)
		}
		c := callFrom(ctx)
		if c == nil || c.Tool == nil || c.Principal == nil {
			return next(ctx, req)
		}
		if err := b.spend(ctx, c); err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

func (b *Budgets) spend(ctx context.Context, c *call) error {
	cfg, ls, ws := b.applying(c.Principal)
	if len(ls) == 0 {
		return nil
	}
	var declared *float64
	if cost := c.Tool.Spec.GetCost(); cost != nil {
		u := cost.GetUnits()
		declared = &u
	}
	cost := cfg.Cost(declared)
	charges := make([]budget.Charge, len(ls))
	for i, l := range ls {
		charges[i] = budget.Charge{Key: counterKey(l, ws[i]), Cost: cost, Limit: l.Units, Window: l.Window}
	}
	out, err := b.store.Spend(ctx, charges)
	if err != nil {
		c.Decision, c.Reason = "deny", "budget store unavailable"
		e := toolerr.Wrap(err, toolerr.ProviderError, "the budget store is unavailable and this service refuses calls it cannot count; retry shortly")
		e.RetryAfter = time.Second
		return e
	}
	if out.Allowed {
		for i, l := range ls {
			b.remember(l.Name, ws[i])
		}
		return nil
	}
	l, who := ls[out.Refused], ws[out.Refused]
	b.remember(l.Name, who)
	used := out.Used[out.Refused]
	b.refusals.WithLabelValues(l.Name, c.Principal.Tenant).Inc()
	retry := max(out.Resets[out.Refused].Sub(b.now()), time.Millisecond)
	c.Decision, c.Reason = "deny", fmt.Sprintf("%s: %s spent (%s %s)", RuleBudget, l.Name, l.Per, who)
	e := toolerr.New(toolerr.RateLimited, "budget %q (%d units per %s for %s %s) has %d units left and this call of %s costs %d; it renews in %.1fs",
		l.Name, l.Units, l.Window, l.Per, who, max(l.Units-used, 0), c.Tool.Name, cost, retry.Seconds())
	e.RetryAfter = retry
	e = e.WithNext("wait", fmt.Sprintf("budget %q renews at %s; until then call only free tools or ask the operator for a larger budget",
		l.Name, out.Resets[out.Refused].UTC().Format(time.RFC3339)),
		map[string]any{"budget": l.Name, "renewsAt": out.Resets[out.Refused].UTC().Format(time.RFC3339)})
	return e.WithDetails(map[string]any{"budget": l.Name, "per": l.Per, "units": l.Units, "windowMs": l.Window.Milliseconds(),
		"used": used, "cost": cost})
}

// ExplainBudgets implements BudgetExplainer: the budgets of the policy in
// force that apply to p, what is left of each, and whether the next call
// of t (its declared cost, or the default) would be refused. A budget the
// store cannot read is reported with nothing left, as the chain would
// refuse the call.
func (b *Budgets) ExplainBudgets(ctx context.Context, p *auth.Principal, t *registry.Tool) []BudgetAnswer {
	cfg, ls, ws := b.applying(p)
	if len(ls) == 0 {
		return nil
	}
	cost := int64(0)
	if t != nil {
		var declared *float64
		if c := t.Spec.GetCost(); c != nil {
			u := c.GetUnits()
			declared = &u
		}
		cost = cfg.Cost(declared)
	}
	out := make([]BudgetAnswer, 0, len(ls))
	for i, l := range ls {
		a := BudgetAnswer{Name: l.Name, Limit: l.Units, Window: l.Window.String()}
		if st, err := b.status(ctx, l, ws[i]); err == nil {
			a.Remaining = st.Remaining
		}
		a.Refuses = t != nil && a.Remaining < cost
		out = append(out, a)
	}
	return out
}
