package auth

import (
	"fmt"
	"slices"
	"strings"
)

// RoleConfig is a named set of grants (docs/OPERATIONS.md, "Roles"): API
// keys and client certificates name it in roles, a JWT in the claim
// JWTConfig.RolesClaim names. A role's grants are added to the caller's
// direct permissions; a role's tool sets bind the caller to them.
type RoleConfig struct {
	// Name is how grants refer to the role: lower-case letters, digits,
	// '.', '_' and '-', at most 64 characters; required and unique.
	Name string `yaml:"name"`
	// Description says what the role is for; optional.
	Description string `yaml:"description"`
	// Permissions are the grants: "{resource}:{action}", "{resource}:*" or
	// "*"; at least one.
	Permissions []string `yaml:"permissions"`
	// ToolSets, when set, confine whoever holds the role to these tool
	// sets (with the sets of its other roles and of its own entry).
	ToolSets []string `yaml:"tool_sets"`
}

// maxNameLen bounds role and tool set names.
const maxNameLen = 64

// validName reports whether s may name a role or a tool set: it appears in
// URLs (/mcp/sets/{set}) and headers, so it keeps to a safe alphabet.
func validName(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '-' || c == '_' || c == '.')
		if !ok {
			return false
		}
	}
	return true
}

// validateRoles checks the roles section and returns the defined names.
func (c *Config) validateRoles(ps *problems, sets map[string]bool) map[string]bool {
	names := make(map[string]bool, len(c.Roles))
	for i, r := range c.Roles {
		path := fmt.Sprintf("roles[%d]", i)
		switch {
		case !validName(r.Name):
			ps.add(path, "name", "must be 1 to %d lower-case letters, digits, '.', '_' or '-', starting with a letter or digit", maxNameLen)
		case names[r.Name]:
			ps.add(path, "name", "%q is defined twice", r.Name)
		default:
			names[r.Name] = true
		}
		if len(r.Permissions) == 0 {
			ps.add(path, "permissions", "is empty: the role grants nothing")
		}
		for j, g := range r.Permissions {
			if err := validateGrant(g); err != nil {
				ps.add(path, fmt.Sprintf("permissions[%d]", j), "%v", err)
			}
		}
		validateSetRefs(ps, path, r.ToolSets, sets)
	}
	return names
}

// validateRoleRefs checks that every role an entry grants is defined.
func validateRoleRefs(ps *problems, path string, roles []string, defined map[string]bool) {
	for j, r := range roles {
		if !defined[r] {
			ps.add(path, fmt.Sprintf("roles[%d]", j), "%q is not a role of this file (defined: %s)", r, listOrNone(defined))
		}
	}
}

func listOrNone(m map[string]bool) string {
	if len(m) == 0 {
		return "none"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// LintRoles returns the roles whose every grant matches no tool
// permission: a role that grants nothing known is a mistake (a typo in a
// resource, a tool since removed). known is as for
// [Config.LintPermissions]; a role granting "*" is never reported.
func (c *Config) LintRoles(known func(resource, action string) bool) []string {
	if known == nil {
		return nil
	}
	var out []string
	for i, r := range c.Roles {
		grantsSomething := false
		for _, g := range r.Permissions {
			resource, action, _ := strings.Cut(g, ":")
			if g == "*" || known(resource, action) {
				grantsSomething = true
				break
			}
		}
		if !grantsSomething {
			out = append(out, c.lineOf(fmt.Sprintf("roles[%d]", i))+fmt.Sprintf("roles[%d] (role %q): grants nothing known: no tool or operator route requires any of %s",
				i, r.Name, strings.Join(r.Permissions, ", ")))
		}
	}
	return out
}

// role is a compiled role.
type role struct {
	name        string
	permissions []string
	sets        []string
}

// grant adds the permissions and tool sets of the named roles to p (roles
// not defined are dropped: a JWT may carry roles meant for other
// services) and records the roles granted in p.Roles.
func (pol *policySnapshot) grant(p *Principal, names []string) {
	if len(names) == 0 {
		return
	}
	var granted []string
	sets := p.ToolSets
	for _, n := range names {
		r, ok := pol.roles[n]
		if !ok || slices.Contains(granted, n) {
			continue
		}
		granted = append(granted, n)
		for _, g := range r.permissions {
			if !slices.Contains(p.Permissions, g) {
				p.Permissions = append(p.Permissions, g)
			}
		}
		for _, s := range r.sets {
			if !slices.Contains(sets, s) {
				sets = append(sets, s)
			}
		}
	}
	p.Roles = granted
	p.ToolSets = sets
}

// lineOf is "line N: " for the entry at path when the config came from a
// file, else "".
func (c *Config) lineOf(path string) string {
	if l := c.lines[path]; l > 0 {
		return fmt.Sprintf("line %d: ", l)
	}
	return ""
}
