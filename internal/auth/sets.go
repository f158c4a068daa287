package auth

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// ToolSetConfig is a named set of tools, a "virtual server"
// (docs/OPERATIONS.md, "Tool sets"): served at /mcp/sets/{name}, selected
// on gRPC and REST with the x-toolsvc-tool-set header, and bound to API
// keys, client certificates and roles in their tool_sets. A tool is in the
// set when some include selector matches it and no exclude selector does.
type ToolSetConfig struct {
	// Name is how the set is chosen: lower-case letters, digits, '.', '_'
	// and '-', at most 64 characters; required and unique.
	Name string `yaml:"name"`
	// Description says what the set is for; optional.
	Description string `yaml:"description"`
	// Include selects the tools of the set; at least one selector.
	Include []ToolSelector `yaml:"include"`
	// Exclude removes tools an include selected; optional.
	Exclude []ToolSelector `yaml:"exclude"`
}

// ToolSelector matches the tools that meet all of its fields (at least
// one is required).
type ToolSelector struct {
	// Tool is a tool name, or a pattern with '*' (e.g. "search-*").
	Tool string `yaml:"tool"`
	// Tag matches the tools carrying this tag.
	Tag string `yaml:"tag"`
	// Category matches the tools of this category (query, mutation, ...).
	Category string `yaml:"category"`
	// Version matches tool versions: "1.2.0" exactly, "1.2.x", "1.x" (or
	// "1"), or "*".
	Version string `yaml:"version"`
}

// ToolFacts is what a tool set selects on: a tool's name, version,
// category and tags, as its contract declares them.
type ToolFacts struct {
	Name, Version, Category string
	Tags                    []string
}

// ToolSet is a compiled tool set of an Authenticator's policy.
type ToolSet struct {
	// Name and Description are the auth file's.
	Name, Description string
	include, exclude  []selector
	// view is the view of a caller that chose this set, built once.
	view *ToolView
	// id is unique in the process, so that a set redefined under the same
	// name by a new auth file never shares a cached listing with the old.
	id uint64
}

var toolSetIDs atomic.Uint64

// Contains reports whether t is in s.
func (s *ToolSet) Contains(t ToolFacts) bool {
	if s == nil {
		return false
	}
	in := false
	for i := range s.include {
		if s.include[i].matches(t) {
			in = true
			break
		}
	}
	if !in {
		return false
	}
	for i := range s.exclude {
		if s.exclude[i].matches(t) {
			return false
		}
	}
	return true
}

type selector struct {
	tool, tag, category string
	// version: major, minor, patch; -1 matches any; nil version matches all.
	version []int
}

func (sel *selector) matches(t ToolFacts) bool {
	if sel.tool != "" {
		if strings.Contains(sel.tool, "*") {
			if ok, _ := path.Match(sel.tool, t.Name); !ok {
				return false
			}
		} else if sel.tool != t.Name {
			return false
		}
	}
	if sel.category != "" && sel.category != t.Category {
		return false
	}
	if sel.tag != "" && !slices.Contains(t.Tags, sel.tag) {
		return false
	}
	if sel.version != nil {
		parts := strings.SplitN(t.Version, ".", 3)
		for i, want := range sel.version {
			if want < 0 {
				continue
			}
			if i >= len(parts) {
				return false
			}
			n, err := strconv.Atoi(parts[i])
			if err != nil || n != want {
				return false
			}
		}
	}
	return true
}

// parseVersionPattern compiles "1.2.0", "1.2.x", "1.x", "1" and "*".
func parseVersionPattern(p string) ([]int, error) {
	if p == "*" {
		return []int{-1, -1, -1}, nil
	}
	parts := strings.Split(p, ".")
	if len(parts) > 3 {
		return nil, fmt.Errorf("%q is not a version pattern (want 1.2.0, 1.2.x, 1.x or *)", p)
	}
	out := []int{-1, -1, -1}
	wild := false
	for i, s := range parts {
		if s == "x" || s == "*" {
			wild = true
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || wild {
			return nil, fmt.Errorf("%q is not a version pattern (want 1.2.0, 1.2.x, 1.x or *)", p)
		}
		out[i] = n
	}
	return out, nil
}

func compileSelector(s ToolSelector) (selector, error) {
	sel := selector{tool: s.Tool, tag: s.Tag, category: s.Category}
	if s.Tool == "" && s.Tag == "" && s.Category == "" && s.Version == "" {
		return sel, fmt.Errorf("selects nothing: give tool, tag, category or version")
	}
	if _, err := path.Match(s.Tool, ""); err != nil || strings.ContainsAny(s.Tool, "/?[]\\") {
		return sel, fmt.Errorf("tool %q is not a tool name or a pattern with '*'", s.Tool)
	}
	if s.Version != "" {
		v, err := parseVersionPattern(s.Version)
		if err != nil {
			return sel, err
		}
		sel.version = v
	}
	return sel, nil
}

// validateToolSets checks the tool_sets section and returns the defined
// names.
func (c *Config) validateToolSets(ps *problems) map[string]bool {
	names := make(map[string]bool, len(c.ToolSets))
	for i, s := range c.ToolSets {
		p := fmt.Sprintf("tool_sets[%d]", i)
		switch {
		case !validName(s.Name):
			ps.add(p, "name", "must be 1 to %d lower-case letters, digits, '.', '_' or '-', starting with a letter or digit", maxNameLen)
		case names[s.Name]:
			ps.add(p, "name", "%q is defined twice", s.Name)
		default:
			names[s.Name] = true
		}
		if len(s.Include) == 0 {
			ps.add(p, "include", "is empty: the set would hold no tool")
		}
		for j, sel := range s.Include {
			if _, err := compileSelector(sel); err != nil {
				ps.add(p, fmt.Sprintf("include[%d]", j), "%v", err)
			}
		}
		for j, sel := range s.Exclude {
			if _, err := compileSelector(sel); err != nil {
				ps.add(p, fmt.Sprintf("exclude[%d]", j), "%v", err)
			}
		}
	}
	return names
}

// validateSetRefs checks that every tool set an entry is bound to exists.
func validateSetRefs(ps *problems, path string, sets []string, defined map[string]bool) {
	for j, s := range sets {
		if !defined[s] {
			ps.add(path, fmt.Sprintf("tool_sets[%d]", j), "%q is not a tool set of this file (defined: %s)", s, listOrNone(defined))
		}
	}
}

// LintToolSets returns the tool sets that hold no tool of tools: a set
// whose selectors match nothing is a mistake.
func (c *Config) LintToolSets(tools []ToolFacts) []string {
	var out []string
	for i, sc := range c.ToolSets {
		s := compileToolSet(sc)
		if !slices.ContainsFunc(tools, s.Contains) {
			out = append(out, c.lineOf(fmt.Sprintf("tool_sets[%d]", i))+fmt.Sprintf("tool_sets[%d] (set %q): holds no tool: no tool matches its include selectors", i, sc.Name))
		}
	}
	return out
}

// compileToolSet compiles a validated set.
func compileToolSet(sc ToolSetConfig) *ToolSet {
	s := &ToolSet{Name: sc.Name, Description: sc.Description, id: toolSetIDs.Add(1)}
	for _, sel := range sc.Include {
		c, _ := compileSelector(sel) // checked by Validate
		s.include = append(s.include, c)
	}
	for _, sel := range sc.Exclude {
		c, _ := compileSelector(sel)
		s.exclude = append(s.exclude, c)
	}
	return s
}

// ToolView is what one caller sees: the union of some tool sets. A nil
// view sees every tool.
type ToolView struct {
	sets []*ToolSet
	key  string
	// Selected is the set the caller chose (x-toolsvc-tool-set, or the
	// /mcp/sets/{set} endpoint); empty when the view is the credential's
	// bound sets.
	Selected string
}

func newToolView(sets []*ToolSet, selected string) *ToolView {
	ids := make([]string, len(sets))
	for i, s := range sets {
		ids[i] = strconv.FormatUint(s.id, 10)
	}
	slices.Sort(ids)
	return &ToolView{sets: sets, key: "sets:" + strings.Join(ids, ","), Selected: selected}
}

// Contains reports whether the view holds t; a nil view holds every tool.
func (v *ToolView) Contains(t ToolFacts) bool {
	if v == nil {
		return true
	}
	for _, s := range v.sets {
		if s.Contains(t) {
			return true
		}
	}
	return false
}

// Key identifies the view for caches of what it sees: equal for views of
// the same compiled sets. Empty for a nil view.
func (v *ToolView) Key() string {
	if v == nil {
		return ""
	}
	return v.key
}

// Names returns the names of the view's sets; nil for a nil view.
func (v *ToolView) Names() []string {
	if v == nil {
		return nil
	}
	out := make([]string, len(v.sets))
	for i, s := range v.sets {
		out[i] = s.Name
	}
	return out
}

// policySnapshot is the compiled roles and tool sets of one auth file.
type policySnapshot struct {
	roles map[string]*role
	sets  map[string]*ToolSet
	// order is the sets in file order.
	order []*ToolSet
	// roleOrder is the roles in file order.
	roleOrder []*role
}

func compilePolicy(cfg *Config) *policySnapshot {
	pol := &policySnapshot{roles: make(map[string]*role, len(cfg.Roles)), sets: make(map[string]*ToolSet, len(cfg.ToolSets))}
	for _, sc := range cfg.ToolSets {
		s := compileToolSet(sc)
		s.view = newToolView([]*ToolSet{s}, s.Name)
		pol.sets[s.Name] = s
		pol.order = append(pol.order, s)
	}
	for _, rc := range cfg.Roles {
		r := &role{name: rc.Name, permissions: slices.Clone(rc.Permissions), sets: slices.Clone(rc.ToolSets)}
		pol.roles[r.name] = r
		pol.roleOrder = append(pol.roleOrder, r)
	}
	return pol
}

// bind sets p.View to the union of the tool sets p is bound to (nil when
// it is bound to none).
func (pol *policySnapshot) bind(p *Principal) {
	if len(p.ToolSets) == 0 {
		p.View = nil
		return
	}
	sets := make([]*ToolSet, 0, len(p.ToolSets))
	for _, n := range p.ToolSets {
		if s, ok := pol.sets[n]; ok {
			sets = append(sets, s)
		}
	}
	p.View = newToolView(sets, "")
}

// ToolSetError is the refusal of a tool set a caller asked for that does
// not exist or that its credential is not bound to: both read the same to
// the caller, so that set names are not disclosed.
type ToolSetError struct {
	// Set is the name asked for.
	Set string
	// Rule says which, for the audit record: "unknown tool set" or "tool
	// set not bound to the credential".
	Rule string
}

func (e *ToolSetError) Error() string {
	return fmt.Sprintf("no tool set %q", e.Set)
}

// SelectToolSet narrows p's view to the tool set named name (the
// x-toolsvc-tool-set header, or the /mcp/sets/{set} endpoint): an empty
// name leaves the view as the credential's bound sets. A set that does
// not exist, or that a caller bound to other sets asks for, is a
// *[ToolSetError].
func (a *Authenticator) SelectToolSet(p *Principal, name string) error {
	a = a.current()
	if name == "" {
		return nil
	}
	s, ok := a.pol.sets[name]
	switch {
	case !ok:
		return &ToolSetError{Set: name, Rule: "unknown tool set"}
	case len(p.ToolSets) > 0 && !slices.Contains(p.ToolSets, name):
		return &ToolSetError{Set: name, Rule: "tool set not bound to the credential"}
	}
	p.View = s.view // shared: a view is never modified
	return nil
}

// ToolSet returns the tool set named name of a's policy.
func (a *Authenticator) ToolSet(name string) (*ToolSet, bool) {
	a = a.current()
	s, ok := a.pol.sets[name]
	return s, ok
}

// ToolSets returns a's tool sets in the auth file's order.
func (a *Authenticator) ToolSets() []*ToolSet { return slices.Clone(a.current().pol.order) }

// RolesGranting returns, in the auth file's order, the roles of a's
// policy whose grants cover permission: what explain suggests for a
// missing permission.
func (a *Authenticator) RolesGranting(permission string) []string {
	a = a.current()
	var out []string
	for _, r := range a.pol.roleOrder {
		if (&Principal{Permissions: r.permissions}).Allows(permission) {
			out = append(out, r.name)
		}
	}
	return out
}
