package auth

import (
	"fmt"
	"math"
	"time"
)

// Budget scopes: whose units a budget counts.
const (
	BudgetPerTenant = "tenant"
	BudgetPerTeam   = "team"
	BudgetPerKey    = "key"
)

// MaxBudgetWindow bounds a budget's window.
const MaxBudgetWindow = 366 * 24 * time.Hour

// BudgetsConfig is the budgets section of the auth file
// (docs/OPERATIONS.md "Budgets"): units each caller may spend per window,
// summed from the cost every tool declares in its contract.
type BudgetsConfig struct {
	// DefaultCost is what one call of a tool without a declared cost
	// spends; nil means 1. Costs are rounded up to whole units.
	DefaultCost *float64 `yaml:"default_cost"`
	// Limits are the budgets; a call must fit in every one that applies.
	Limits []BudgetConfig `yaml:"limits"`
}

// BudgetConfig is one budget: Units per Window for each tenant, team or
// key (Per), or for the one named by Match.
type BudgetConfig struct {
	// Name names the budget in errors, the operator view and metrics;
	// required and unique.
	Name string `yaml:"name"`
	// Per is whose units are counted: "tenant", "team" (the credential's
	// team_id; callers without one are not counted) or "key" (one
	// credential: its subject within its tenant).
	Per string `yaml:"per"`
	// Match, when set, restricts the budget to that tenant, team or
	// subject; empty: every one has a budget of its own.
	Match string `yaml:"match"`
	// Units is the most a window may spend; at least 1.
	Units int64 `yaml:"units"`
	// Window is the window's length, e.g. 24h; windows are aligned to the
	// Unix epoch (a day runs from 00:00 UTC). At least 1s.
	Window time.Duration `yaml:"window"`
}

// Cost is what one call of a tool declaring units (nil: none declared)
// spends under b: the declared units rounded up, or the default cost.
func (b *BudgetsConfig) Cost(declared *float64) int64 {
	v := 1.0
	switch {
	case declared != nil:
		v = *declared
	case b != nil && b.DefaultCost != nil:
		v = *b.DefaultCost
	}
	if v <= 0 || math.IsNaN(v) {
		return 0
	}
	return int64(math.Ceil(v))
}

func (b *BudgetsConfig) validate(ps *problems) {
	if b.DefaultCost != nil && (*b.DefaultCost < 0 || math.IsNaN(*b.DefaultCost) || *b.DefaultCost > math.MaxInt32) {
		ps.add("budgets", "default_cost", "must be between 0 and %d", math.MaxInt32)
	}
	names := map[string]int{}
	for i, l := range b.Limits {
		path := fmt.Sprintf("budgets.limits[%d]", i)
		switch {
		case l.Name == "":
			ps.add(path, "name", "is required")
		case !isPermissionPart(l.Name):
			ps.add(path, "name", "must be letters, digits, '.', '_' and '-'")
		default:
			if j, dup := names[l.Name]; dup {
				ps.add(path, "name", "%q is already budgets.limits[%d]", l.Name, j)
			}
			names[l.Name] = i
		}
		switch l.Per {
		case BudgetPerTenant, BudgetPerTeam, BudgetPerKey:
		default:
			ps.add(path, "per", "must be tenant, team or key, not %q", l.Per)
		}
		if l.Units < 1 {
			ps.add(path, "units", "must be at least 1")
		}
		if l.Window < time.Second || l.Window > MaxBudgetWindow {
			ps.add(path, "window", "must be between 1s and %v", MaxBudgetWindow)
		}
	}
}
