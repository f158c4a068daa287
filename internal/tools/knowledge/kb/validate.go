package kb

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// prepare validates it, fills defaults, compiles its constraints and sets its
// hash. It returns a human sentence describing the first problem found.
func prepare(it *Item) (reason string, ok bool) {
	switch {
	case it.ID == "":
		return `missing required field "id"`, false
	case !idPattern.MatchString(it.ID):
		return fmt.Sprintf("invalid id %q: must match %s", it.ID, idPattern), false
	case it.Title == "":
		return `missing required field "title"`, false
	case it.Status == "":
		return `missing required field "status"`, false
	}
	if r := checkEnum("type", it.Type, validTypes); r != "" {
		return r, false
	}
	if r := checkEnum("layer", it.Layer, validLayers); r != "" {
		return r, false
	}
	if r := checkEnum("status", it.Status, validStatuses); r != "" {
		return r, false
	}
	if r := checkOwner(it); r != "" {
		return r, false
	}
	if it.Severity == "" {
		it.Severity = SeverityWarn
	}
	if r := checkEnum("severity", it.Severity, validSeverities); r != "" {
		return r, false
	}
	if it.Supersedes != "" {
		if !idPattern.MatchString(it.Supersedes) {
			return fmt.Sprintf("invalid supersedes %q: must be an item id", it.Supersedes), false
		}
		if it.Supersedes == it.ID {
			return "supersedes: an item cannot supersede itself", false
		}
	}
	for i, tag := range it.Tags {
		if strings.TrimSpace(tag) == "" {
			return fmt.Sprintf("tag %d is empty", i+1), false
		}
	}
	it.rules = make([]rule, len(it.Constraints))
	for i := range it.Constraints {
		c := &it.Constraints[i]
		if c.Severity == "" {
			c.Severity = it.Severity
		}
		r, err := compileConstraint(c)
		if err != "" {
			return fmt.Sprintf("constraint %d: %s", i+1, err), false
		}
		it.rules[i] = r
	}
	it.Hash = hashItem(it)
	return "", true
}

// checkOwner validates the owner's form. Whether an org, team or project
// item must have one depends on the layout, so Library checks that.
func checkOwner(it *Item) string {
	switch {
	case it.Owner == "":
		return ""
	case it.Layer == LayerCompany:
		return `invalid owner: a company item belongs to its whole tenant; remove "owner"`
	case !ownerPattern.MatchString(it.Owner):
		return fmt.Sprintf("invalid owner %q: must be the %s of the %s layer (letters, digits, \".\", \"_\", \":\", \"@\", \"-\"; at most 128 bytes)",
			clip(it.Owner), OwnerKey(it.Layer), it.Layer)
	}
	return ""
}

func checkEnum(field, value string, valid []string) string {
	if value == "" {
		return fmt.Sprintf("missing required field %q", field)
	}
	if !slices.Contains(valid, value) {
		return fmt.Sprintf("unknown %s %q (want one of %s)", field, value, strings.Join(valid, ", "))
	}
	return ""
}

func compileConstraint(c *Constraint) (rule, string) {
	switch {
	case c.Operator == "":
		return rule{}, "missing operator"
	case !slices.Contains(validOperators, c.Operator):
		return rule{}, fmt.Sprintf("unknown operator %q", c.Operator)
	case c.Target == "":
		return rule{}, "missing target"
	case !slices.Contains(validTargets, c.Target):
		return rule{}, fmt.Sprintf("unknown target %q", c.Target)
	case !slices.Contains(validSeverities, c.Severity):
		return rule{}, fmt.Sprintf("unknown severity %q", c.Severity)
	case c.Pattern == "":
		return rule{}, "missing pattern"
	case len(c.Pattern) > MaxPatternLength:
		return rule{}, fmt.Sprintf("pattern is %d bytes long; the limit is %d", len(c.Pattern), MaxPatternLength)
	case c.Target == TargetDependency && len(c.AppliesTo) > 0:
		return rule{}, `appliesTo has no effect on target "dependency"`
	}
	for _, g := range c.AppliesTo {
		if r := checkGlob("appliesTo", g); r != "" {
			return rule{}, r
		}
	}
	if c.Target == TargetFile {
		if r := checkGlob("pattern", c.Pattern); r != "" {
			return rule{}, r
		}
		return rule{glob: c.Pattern}, ""
	}
	if _, err := regexp.Compile(c.Pattern); err != nil {
		return rule{}, regexReason(c.Pattern, err)
	}
	expr := c.Pattern
	if c.Target == TargetDependency || c.Target == TargetImport {
		// Whole-name matching: "mysql" must not flag "mysqlx".
		expr = `^(?:` + expr + `)$`
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return rule{}, regexReason(c.Pattern, err)
	}
	return rule{re: re}, ""
}

func checkGlob(field, g string) string {
	switch {
	case g == "":
		return fmt.Sprintf("%s: empty glob", field)
	case len(g) > MaxPatternLength:
		return fmt.Sprintf("%s: glob is %d bytes long; the limit is %d", field, len(g), MaxPatternLength)
	case !doublestar.ValidatePattern(g):
		return fmt.Sprintf("%s: invalid glob %q: %v", field, g, doublestar.ErrBadPattern)
	}
	return ""
}

func regexReason(pattern string, err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid regex %q: %s", pattern, se.Code)
	}
	return fmt.Sprintf("invalid regex %q: %v", pattern, err)
}

// hashItem hashes the content-bearing fields in a length-prefixed encoding,
// so no two different items share an encoding. Tags are sorted because their
// order carries no meaning.
func hashItem(it *Item) string {
	h := sha256.New()
	str := func(s string) { fmt.Fprintf(h, "%d:%s", len(s), s) }
	list := func(l []string) {
		fmt.Fprintf(h, "[%d]", len(l))
		for _, s := range l {
			str(s)
		}
	}
	for _, s := range []string{it.Type, it.Layer, it.Title, it.Summary, it.Status, it.Severity} {
		str(s)
	}
	list(slices.Sorted(slices.Values(it.Tags)))
	fmt.Fprintf(h, "[%d]", len(it.Constraints))
	for _, c := range it.Constraints {
		str(c.Operator)
		str(c.Target)
		str(c.Pattern)
		list(c.AppliesTo)
		str(c.Severity)
		str(c.Message)
	}
	str(it.Content)
	// Appended only when set, so that items without an owner keep the hash
	// they had before owners existed (and a sync does not rewrite them).
	if it.Owner != "" {
		str("owner")
		str(it.Owner)
	}
	return hex.EncodeToString(h.Sum(nil))
}
