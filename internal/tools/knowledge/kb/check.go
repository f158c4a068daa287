package kb

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// defaultConfigGlobs select config files for TargetConfig constraints
// without appliesTo.
var defaultConfigGlobs = []string{
	"**/*.yaml", "**/*.yml", "**/*.json", "**/*.toml", "**/*.ini", "**/*.env", "**/*.properties",
}

// maxSubjectLength caps the matched text quoted in a Violation.
const maxSubjectLength = 200

// File is a file to check: its path (slash- or backslash-separated, relative
// to the repository root) and its content.
type File struct {
	Path    string
	Content string
}

// Dependency is a dependency to check. Version is informational.
type Dependency struct {
	Name    string
	Version string
}

// CheckInput is what Check evaluates.
type CheckInput struct {
	Files        []File
	Dependencies []Dependency
	// MinSeverity is the lowest severity reported: "info", "warn" or
	// "block". Empty means "warn".
	MinSeverity string
	// ItemIDs restricts the check to these items. Empty means every
	// accepted item.
	ItemIDs []string
	// Viewer, when set, evaluates only the items it sees; a named item it
	// does not see is reported as unknown, like one that does not exist.
	Viewer *Viewer
}

// Violation is one broken constraint.
type Violation struct {
	ItemID    string
	ItemTitle string
	// Layer and Owner are those of the item the violation came from.
	Layer, Owner string

	Constraint Constraint
	Severity   string
	// Message is the constraint's message, else a generated sentence naming
	// what matched.
	Message string
	// Subject is what broke the rule: the dependency name, file path,
	// import path or matched text (cut to 200 bytes). Empty when the
	// violation is that nothing matched a required pattern.
	Subject string
	File    string // the file as given in CheckInput, "" for dependencies and missing requirements
	Line    int    // 1-based line, 0 when the violation concerns a whole file
}

// Summary counts violations by severity.
type Summary struct {
	Info, Warn, Block int
}

// CheckResult is the outcome of Check.
type CheckResult struct {
	// Passed is false iff a constraint of severity block was violated,
	// whatever MinSeverity filtered out.
	Passed     bool
	Violations []Violation
	// Summary counts the reported Violations.
	Summary Summary
	// Truncated reports that more than MaxViolations violations were found
	// at or above MinSeverity and only the first MaxViolations are listed.
	Truncated bool
	// ItemsEvaluated counts the accepted items checked.
	ItemsEvaluated int
	// ConstraintsEvaluated counts the constraints that applied to the input:
	// those whose target had something to look at.
	ConstraintsEvaluated int
	// UnknownItemIDs lists the requested ItemIDs that are not in the Set
	// (or that the Viewer does not see).
	UnknownItemIDs []string
	// Superseded lists the accepted items left out because an accepted item
	// the Viewer sees, of the same or a narrower layer, names them in its
	// supersedes key (see Supersedes), in item id order.
	Superseded []Supersession
}

// Supersession is an item a check left out and the item that replaced it.
type Supersession struct {
	Item, By *Item
}

// InputError reports a CheckInput field with an invalid value.
type InputError struct {
	Field  string
	Reason string
}

// Error returns "knowledge: invalid FIELD: REASON".
func (e *InputError) Error() string {
	return "knowledge: invalid " + e.Field + ": " + e.Reason
}

// Check evaluates the constraints of accepted items against in; the package
// documentation describes the semantics. It returns an *InputError for an
// invalid MinSeverity or a file without a path, and the context's error if
// ctx ends first.
func (s *Set) Check(ctx context.Context, in CheckInput) (CheckResult, error) {
	minSev := in.MinSeverity
	if minSev == "" {
		minSev = SeverityWarn
	}
	if severityRank(minSev) == 0 {
		return CheckResult{}, &InputError{
			Field:  "MinSeverity",
			Reason: fmt.Sprintf("%q is not one of info, warn, block", in.MinSeverity),
		}
	}
	for i, f := range in.Files {
		if strings.TrimSpace(f.Path) == "" {
			return CheckResult{}, &InputError{Field: fmt.Sprintf("Files[%d].Path", i), Reason: "empty path"}
		}
	}
	items, unknown := s.selectItems(in.ItemIDs, in.Viewer)
	items, superseded := s.dropSuperseded(items, in.Viewer)
	ev := &evaluator{
		ctx:    ctx,
		min:    severityRank(minSev),
		files:  prepareFiles(in.Files),
		deps:   slices.SortedStableFunc(slices.Values(in.Dependencies), func(a, b Dependency) int { return cmp.Compare(a.Name, b.Name) }),
		passed: true,
	}
	ev.res.UnknownItemIDs = unknown
	ev.res.Superseded = superseded
	for _, it := range items {
		ev.res.ItemsEvaluated++
		for i := range it.Constraints {
			if err := ctx.Err(); err != nil {
				return CheckResult{}, err
			}
			applied, err := ev.evaluate(it, i)
			if err != nil {
				return CheckResult{}, err
			}
			if applied {
				ev.res.ConstraintsEvaluated++
			}
		}
	}
	ev.res.Passed = ev.passed
	return ev.res, nil
}

// selectItems returns the accepted items to evaluate, in id order, and the
// requested ids the set does not know.
func (s *Set) selectItems(ids []string, v *Viewer) (items []*Item, unknown []string) {
	if len(ids) == 0 {
		for _, it := range s.items {
			if it.Status == StatusAccepted && v.Sees(it) {
				items = append(items, it)
			}
		}
		return items, nil
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		it, ok := s.GetVisible(id, v)
		switch {
		case !ok:
			unknown = append(unknown, id)
		case it.Status == StatusAccepted:
			items = append(items, it)
		}
	}
	slices.SortFunc(items, func(a, b *Item) int { return cmp.Compare(a.ID, b.ID) })
	return items, unknown
}

// dropSuperseded removes from items those that an accepted item v sees
// supersedes (whether or not that item was selected: the caller's
// knowledge is what it sees, not what it named).
func (s *Set) dropSuperseded(items []*Item, v *Viewer) (kept []*Item, dropped []Supersession) {
	for _, it := range items {
		var by *Item
		for _, id := range it.SupersededBy {
			if n := s.byID[id]; n != nil && v.Sees(n) && Supersedes(n, it) {
				by = n
				break
			}
		}
		if by != nil {
			dropped = append(dropped, Supersession{Item: it, By: by})
			continue
		}
		kept = append(kept, it)
	}
	return kept, dropped
}

// checkedFile is a File with its path normalised for glob matching and its
// line index and imports computed at most once per Check.
type checkedFile struct {
	File
	norm    string
	lines   *lineIndex
	imports []importRef
	scanned bool
}

func prepareFiles(in []File) []*checkedFile {
	out := make([]*checkedFile, 0, len(in))
	for _, f := range in {
		out = append(out, &checkedFile{File: f, norm: normalizePath(f.Path)})
	}
	slices.SortStableFunc(out, func(a, b *checkedFile) int { return cmp.Compare(a.Path, b.Path) })
	return out
}

// normalizePath makes a caller's path comparable with globs: forward
// slashes, no "./" or leading "/", no "..".
func normalizePath(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/")
}

func (f *checkedFile) line(offset int) int {
	if f.lines == nil {
		f.lines = newLineIndex(f.Content)
	}
	return f.lines.line(offset)
}

func (f *checkedFile) importRefs() []importRef {
	if !f.scanned {
		f.imports = extractImports(importLanguage(f.norm), f.Content)
		f.scanned = true
	}
	return f.imports
}

// lineIndex maps byte offsets to 1-based line numbers.
type lineIndex struct {
	newlines []int
}

func newLineIndex(s string) *lineIndex {
	var nl []int
	for i := range len(s) {
		if s[i] == '\n' {
			nl = append(nl, i)
		}
	}
	return &lineIndex{newlines: nl}
}

func (l *lineIndex) line(offset int) int {
	return sort.SearchInts(l.newlines, offset) + 1
}

// evaluator holds the state of one Check call.
type evaluator struct {
	ctx    context.Context
	min    int
	files  []*checkedFile
	deps   []Dependency
	passed bool
	res    CheckResult
}

// room is how many more violations can be listed.
func (ev *evaluator) room() int {
	return MaxViolations - len(ev.res.Violations)
}

// report records a violation: any block violation fails the check; only
// those at or above the minimum severity are listed, up to MaxViolations.
func (ev *evaluator) report(it *Item, i int, subject, file string, line int, generated string) {
	c := it.Constraints[i]
	if c.Severity == SeverityBlock {
		ev.passed = false
	}
	if severityRank(c.Severity) < ev.min {
		return
	}
	if ev.room() <= 0 {
		ev.res.Truncated = true
		return
	}
	msg := c.Message
	if msg == "" {
		msg = generated
	}
	c.AppliesTo = slices.Clone(c.AppliesTo)
	ev.res.Violations = append(ev.res.Violations, Violation{
		ItemID: it.ID, ItemTitle: it.Title, Layer: it.Layer, Owner: it.Owner, Constraint: c, Severity: c.Severity,
		Message: msg, Subject: subject, File: file, Line: line,
	})
	switch c.Severity {
	case SeverityInfo:
		ev.res.Summary.Info++
	case SeverityWarn:
		ev.res.Summary.Warn++
	case SeverityBlock:
		ev.res.Summary.Block++
	}
}

// matchLimit bounds the matches collected per file: enough to fill the
// remaining room and notice truncation, and at least one so that a block
// violation is always seen.
func (ev *evaluator) matchLimit() int {
	return max(ev.room(), 0) + 1
}

// evaluate runs constraint i of it and reports whether it applied.
func (ev *evaluator) evaluate(it *Item, i int) (bool, error) {
	c, r := it.Constraints[i], it.rules[i]
	if c.Target == TargetDependency {
		return ev.evalDependencies(it, i, r), nil
	}
	scope := ev.scope(c)
	if len(scope) == 0 {
		return false, nil
	}
	var err error
	switch c.Target {
	case TargetFile:
		ev.evalPaths(it, i, r, scope)
	case TargetImport:
		err = ev.evalImports(it, i, r, scope)
	default: // TargetCode, TargetConfig
		err = ev.evalContent(it, i, r, scope)
	}
	return true, err
}

// scope returns the files a file-based constraint looks at.
func (ev *evaluator) scope(c Constraint) []*checkedFile {
	globs := c.AppliesTo
	if len(globs) == 0 && c.Target == TargetConfig {
		globs = defaultConfigGlobs
	}
	var out []*checkedFile
	for _, f := range ev.files {
		if c.Target == TargetImport && importLanguage(f.norm) == "" {
			continue
		}
		if len(globs) == 0 || matchAny(globs, f.norm) {
			out = append(out, f)
		}
	}
	return out
}

func matchAny(globs []string, p string) bool {
	for _, g := range globs {
		if doublestar.MatchUnvalidated(g, p) {
			return true
		}
	}
	return false
}

// requires reports whether the operator demands a match (must_use,
// must_exist), as opposed to forbidding one (must_not_*) or demanding that
// every subject match (must_match).
func requires(op string) bool { return op == OpMustUse || op == OpMustExist }

func forbids(op string) bool {
	return op == OpMustNotUse || op == OpMustNotExist || op == OpMustNotMatch
}

func (ev *evaluator) evalDependencies(it *Item, i int, r rule) bool {
	if len(ev.deps) == 0 {
		return false
	}
	c := it.Constraints[i]
	found := false
	for _, d := range ev.deps {
		m := r.re.MatchString(d.Name)
		found = found || m
		switch {
		case forbids(c.Operator) && m:
			ev.report(it, i, d.Name, "", 0, fmt.Sprintf("Dependency %q is not allowed: it matches %q.", d.Name, c.Pattern))
		case c.Operator == OpMustMatch && !m:
			ev.report(it, i, d.Name, "", 0, fmt.Sprintf("Dependency %q does not match the required pattern %q.", d.Name, c.Pattern))
		}
	}
	if requires(c.Operator) && !found {
		ev.report(it, i, "", "", 0, fmt.Sprintf("No dependency matches the required pattern %q.", c.Pattern))
	}
	return true
}

func (ev *evaluator) evalPaths(it *Item, i int, r rule, scope []*checkedFile) {
	c := it.Constraints[i]
	found := false
	for _, f := range scope {
		m := doublestar.MatchUnvalidated(r.glob, f.norm)
		found = found || m
		switch {
		case forbids(c.Operator) && m:
			ev.report(it, i, f.Path, f.Path, 0, fmt.Sprintf("File %q is not allowed: it matches %q.", f.Path, c.Pattern))
		case c.Operator == OpMustMatch && !m:
			ev.report(it, i, f.Path, f.Path, 0, fmt.Sprintf("File %q does not match the required pattern %q.", f.Path, c.Pattern))
		}
	}
	if requires(c.Operator) && !found {
		ev.report(it, i, "", "", 0, fmt.Sprintf("No file matches the required pattern %q.", c.Pattern))
	}
}

func (ev *evaluator) evalImports(it *Item, i int, r rule, scope []*checkedFile) error {
	c := it.Constraints[i]
	found := false
	for _, f := range scope {
		if err := ev.ctx.Err(); err != nil {
			return err
		}
		for _, imp := range f.importRefs() {
			m := r.re.MatchString(imp.path)
			found = found || m
			switch {
			case forbids(c.Operator) && m:
				ev.report(it, i, imp.path, f.Path, imp.line, fmt.Sprintf("Import %q is not allowed: it matches %q.", imp.path, c.Pattern))
			case c.Operator == OpMustMatch && !m:
				ev.report(it, i, imp.path, f.Path, imp.line, fmt.Sprintf("Import %q does not match the required pattern %q.", imp.path, c.Pattern))
			}
		}
	}
	if requires(c.Operator) && !found {
		ev.report(it, i, "", "", 0, fmt.Sprintf("No import matches the required pattern %q.", c.Pattern))
	}
	return nil
}

func (ev *evaluator) evalContent(it *Item, i int, r rule, scope []*checkedFile) error {
	c := it.Constraints[i]
	found := false
	for _, f := range scope {
		if err := ev.ctx.Err(); err != nil {
			return err
		}
		switch {
		case forbids(c.Operator):
			for _, loc := range r.re.FindAllStringIndex(f.Content, ev.matchLimit()) {
				found = true
				text := clip(f.Content[loc[0]:loc[1]])
				ev.report(it, i, text, f.Path, f.line(loc[0]), fmt.Sprintf("%q in %s matches the forbidden pattern %q.", text, f.Path, c.Pattern))
			}
		case !found || c.Operator == OpMustMatch:
			m := r.re.MatchString(f.Content)
			found = found || m
			if c.Operator == OpMustMatch && !m {
				ev.report(it, i, f.Path, f.Path, 0, fmt.Sprintf("File %q does not contain the required pattern %q.", f.Path, c.Pattern))
			}
		}
	}
	if requires(c.Operator) && !found {
		ev.report(it, i, "", "", 0, fmt.Sprintf("No %s file contains the required pattern %q.", c.Target, c.Pattern))
	}
	return nil
}

// clip shortens matched text for messages, keeping UTF-8 valid.
func clip(s string) string {
	if len(s) <= maxSubjectLength {
		return s
	}
	cut := maxSubjectLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
