package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
)

// Change is how far a published schema moved (docs/CONTRACTS.md,
// "Versions"): the semantic-version bump it needs.
type Change int

const (
	// Same means nothing changed.
	Same Change = iota
	// Documentation means only annotations changed (description, title,
	// examples, default, $comment): no version bump is needed.
	Documentation
	// Additive is a new optional input property, a new output field, a
	// requirement dropped, an enum value added: a minor bump.
	Additive
	// Breaking is a property removed, renamed or retyped, a new required
	// input property, any other change to a keyword that validates: a
	// major bump.
	Breaking
)

// String names the bump a change needs.
func (c Change) String() string {
	switch c {
	case Same:
		return "no change"
	case Documentation:
		return "documentation only (no bump)"
	case Additive:
		return "additive (minor bump)"
	default:
		return "breaking (major bump)"
	}
}

// annotations never change what a schema accepts.
var annotations = map[string]bool{
	"description": true, "title": true, "examples": true, "default": true, "$comment": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
}

// Compare classifies the change from old to new, two versions of one
// tool's input (output false) or output (output true) schema, and says
// why, one reason per change found. An output may gain fields and make
// existing ones required (it promises more); an input may gain only
// optional properties.
func Compare(old, new map[string]any, output bool) (Change, []string) {
	c := comparer{output: output}
	c.compare(normalize(old), normalize(new), "")
	return c.level, c.reasons
}

type comparer struct {
	output  bool
	level   Change
	reasons []string
}

func (c *comparer) note(level Change, format string, args ...any) {
	c.level = max(c.level, level)
	c.reasons = append(c.reasons, fmt.Sprintf(format, args...))
}

// normalize makes v plain JSON (maps, []any, float64).
func normalize(v map[string]any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

func (c *comparer) compare(old, new map[string]any, path string) {
	at := path
	if at == "" {
		at = "(top level)"
	}
	keys := map[string]bool{}
	for k := range old {
		keys[k] = true
	}
	for k := range new {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		ov, inOld := old[k]
		nv, inNew := new[k]
		if reflect.DeepEqual(ov, nv) {
			continue
		}
		switch {
		case annotations[k]:
			c.note(Documentation, "%s: %s changed", at, k)
		case k == "properties":
			c.properties(asMap(ov), asMap(nv), asStrings(new["required"]), path)
		case k == "required":
			c.required(asStrings(ov), asStrings(nv), asMap(old["properties"]), at)
		case k == "enum" && inOld && inNew:
			c.enum(ov, nv, at)
		case k == "items" || k == "additionalProperties":
			om, ok1 := ov.(map[string]any)
			nm, ok2 := nv.(map[string]any)
			if ok1 && ok2 {
				suffix := "[]"
				if k == "additionalProperties" {
					suffix = "{}"
				}
				c.compare(om, nm, path+suffix)
				continue
			}
			c.note(Breaking, "%s: %s changed", at, k)
		default:
			c.note(Breaking, "%s: %s changed from %s to %s", at, k, show(ov, inOld), show(nv, inNew))
		}
	}
}

func (c *comparer) properties(old, new map[string]any, newRequired []string, path string) {
	for _, k := range sortedKeys(old) {
		if _, ok := new[k]; !ok {
			c.note(Breaking, "%s.%s removed", path, k)
		}
	}
	for _, k := range sortedKeys(new) {
		nv := asMap(new[k])
		ov, ok := old[k]
		if !ok {
			if !c.output && slices.Contains(newRequired, k) {
				c.note(Breaking, "%s.%s added as a required parameter", path, k)
			} else {
				c.note(Additive, "%s.%s added", path, k)
			}
			continue
		}
		c.compare(asMap(ov), nv, path+"."+k)
	}
}

func (c *comparer) required(old, new []string, oldProps map[string]any, at string) {
	for _, k := range new {
		if slices.Contains(old, k) {
			continue
		}
		if _, existed := oldProps[k]; !existed {
			continue // a new property: properties() classified it
		}
		if c.output {
			c.note(Additive, "%s: %s is now always present", at, k)
		} else {
			c.note(Breaking, "%s: %s is now required", at, k)
		}
	}
	for _, k := range old {
		if !slices.Contains(new, k) {
			if c.output {
				c.note(Breaking, "%s: %s is no longer always present", at, k)
			} else {
				c.note(Additive, "%s: %s is no longer required", at, k)
			}
		}
	}
}

func (c *comparer) enum(old, new any, at string) {
	ol, _ := old.([]any)
	nl, _ := new.([]any)
	for _, v := range ol {
		if !slices.ContainsFunc(nl, func(x any) bool { return reflect.DeepEqual(x, v) }) {
			c.note(Breaking, "%s: enum value %v removed", at, v)
		}
	}
	for _, v := range nl {
		if !slices.ContainsFunc(ol, func(x any) bool { return reflect.DeepEqual(x, v) }) {
			c.note(Additive, "%s: enum value %v added", at, v)
		}
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	return m
}

func asStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func show(v any, present bool) string {
	if !present {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) > 80 {
		return "(...)"
	}
	return string(b)
}
