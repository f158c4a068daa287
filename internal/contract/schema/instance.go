package schema

import (
	"errors"
	"fmt"
	"math"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// ErrNoInstance is returned (wrapped) by Minimal when a schema keyword it
// must satisfy has no value it knows how to make.
var ErrNoInstance = errors.New("schema: cannot build a value")

// Minimal returns the smallest value a schema-following client would send:
// an object holds its "required" properties and nothing else, each filled
// with, in order of preference, its "const", its "default", its first
// "examples" entry, its first "enum" value, or a value made to satisfy its
// type, "pattern", "format", lengths and range. It reads the schemas Derive
// returns and the JSON Schemas upstream MCP servers publish ("type" lists
// take their first non-null type; "$ref" into "$defs" of the document is
// followed; "anyOf"/"oneOf" take their first branch). It is what the proof
// that schemas say what the validator requires (the e2e contract test)
// and `toolsvc probe` send.
func Minimal(s Schema) (any, error) {
	m := minimaler{root: s}
	return m.value(s, "", 0)
}

type minimaler struct{ root Schema }

func (m minimaler) value(s Schema, path string, depth int) (any, error) {
	if depth > 32 {
		return nil, fmt.Errorf("%w at %s: nesting deeper than 32", ErrNoInstance, cmpPath(path))
	}
	if ref, ok := s["$ref"].(string); ok {
		target, err := m.resolve(ref)
		if err != nil {
			return nil, fmt.Errorf("%w at %s: %w", ErrNoInstance, cmpPath(path), err)
		}
		return m.value(target, path, depth+1)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if subs, ok := s[key].([]any); ok && len(subs) > 0 {
			if sub, ok := subs[0].(map[string]any); ok {
				return m.value(sub, path, depth+1)
			}
		}
	}
	if v, ok := s["const"]; ok {
		return v, nil
	}
	if v, ok := s["default"]; ok {
		return v, nil
	}
	if ex, ok := s["examples"].([]any); ok && len(ex) > 0 {
		return ex[0], nil
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0], nil
	}
	switch typeOf(s) {
	case "object":
		return m.object(s, path, depth)
	case "array":
		n := intKeyword(s, "minItems", 0)
		items, _ := s["items"].(map[string]any)
		out := make([]any, 0, n)
		for i := range n {
			if items == nil {
				return nil, fmt.Errorf("%w at %s: minItems without items", ErrNoInstance, cmpPath(path))
			}
			v, err := m.value(items, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case "string":
		return minimalString(s, path)
	case "integer", "number":
		return minimalNumber(s, path)
	case "boolean":
		return false, nil
	case "null":
		return nil, nil
	}
	return nil, fmt.Errorf("%w at %s: no type", ErrNoInstance, cmpPath(path))
}

func (m minimaler) object(s Schema, path string, depth int) (any, error) {
	out := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	for _, name := range Required(s) {
		sub, _ := props[name].(map[string]any)
		if sub == nil {
			sub = Schema{}
		}
		p := name
		if path != "" {
			p = path + "." + name
		}
		v, err := m.value(sub, p, depth+1)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// resolve follows a local reference ("#/$defs/x", "#/definitions/x", "#").
func (m minimaler) resolve(ref string) (Schema, error) {
	if !strings.HasPrefix(ref, "#") {
		return nil, fmt.Errorf("$ref %s: only references inside the schema are followed", ref)
	}
	var cur any = m.root
	for part := range strings.SplitSeq(strings.TrimPrefix(strings.TrimPrefix(ref, "#"), "/"), "/") {
		if part == "" {
			continue
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %s does not resolve", ref)
		}
		cur = obj[part]
	}
	s, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %s does not resolve", ref)
	}
	return s, nil
}

// Required returns the names a schema's "required" keyword lists, whether
// it holds []string (Derive) or []any (a parsed document).
func Required(s Schema) []string {
	switch r := s["required"].(type) {
	case []string:
		return r
	case []any:
		out := make([]string, 0, len(r))
		for _, x := range r {
			if name, ok := x.(string); ok {
				out = append(out, name)
			}
		}
		return out
	}
	return nil
}

// typeOf is a schema's type, the first non-null one of a list.
func typeOf(s Schema) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if name, _ := x.(string); name != "" && name != "null" {
				return name
			}
		}
		if len(t) > 0 {
			return "null"
		}
	}
	if _, ok := s["properties"]; ok {
		return "object"
	}
	return ""
}

// intKeyword reads a non-negative integer keyword (minLength, minItems...)
// stored as any numeric type.
func intKeyword(s Schema, key string, def int) int {
	if f, ok := Number(s[key]); ok && f >= 0 && f < 1<<20 {
		return int(f)
	}
	return def
}

// Number reads a JSON Schema keyword's numeric value, stored as any of
// the numeric types a schema built in Go or decoded from JSON holds.
func Number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case interface{ Float64() (float64, error) }: // json.Number
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// formatExamples are values of the formats Derive and upstream schemas use.
var formatExamples = map[string]string{
	"date-time":     "2026-01-02T03:04:05Z",
	"date":          "2026-01-02",
	"time":          "03:04:05Z",
	"email":         "agent@example.com",
	"hostname":      "example.com",
	"ipv4":          "192.0.2.1",
	"ipv6":          "2001:db8::1",
	"uri":           "https://example.com/",
	"uri-reference": "/example",
	"uuid":          "00000000-0000-4000-8000-000000000000",
	"duration":      "P1D",
}

// minimalString makes the shortest string satisfying pattern, format and
// length keywords: the pattern's shortest match, padded (where the pattern
// allows) to minLength.
func minimalString(s Schema, path string) (any, error) {
	minLen := intKeyword(s, "minLength", 0)
	maxLen := intKeyword(s, "maxLength", math.MaxInt32)
	var v string
	switch {
	case s["pattern"] != nil:
		p, _ := s["pattern"].(string)
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			return nil, fmt.Errorf("%w at %s: pattern %q: %w", ErrNoInstance, cmpPath(path), p, err)
		}
		v = shortestMatch(re, minLen)
	case s["format"] != nil:
		f, _ := s["format"].(string)
		ex, ok := formatExamples[f]
		if !ok {
			return nil, fmt.Errorf("%w at %s: format %q", ErrNoInstance, cmpPath(path), f)
		}
		v = ex
	}
	if s["pattern"] == nil && s["format"] == nil {
		for utf8.RuneCountInString(v) < minLen {
			v += "a"
		}
	}
	if n := utf8.RuneCountInString(v); n < minLen || n > maxLen {
		return nil, fmt.Errorf("%w at %s: no string of %d to %d characters found for its pattern", ErrNoInstance, cmpPath(path), minLen, maxLen)
	}
	return v, nil
}

// shortestMatch returns a string the parsed regexp matches: the
// shortest one, except that repetitions grow (leftmost first) while the
// result is shorter than minLen.
func shortestMatch(re *syntax.Regexp, minLen int) string {
	var b strings.Builder
	var walk func(re *syntax.Regexp, need int)
	walk = func(re *syntax.Regexp, need int) {
		switch re.Op {
		case syntax.OpLiteral:
			b.WriteString(string(re.Rune))
		case syntax.OpCharClass:
			if len(re.Rune) > 0 {
				b.WriteRune(pickRune(re.Rune))
			}
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			b.WriteByte('a')
		case syntax.OpCapture:
			walk(re.Sub[0], need)
		case syntax.OpConcat:
			start := utf8.RuneCountInString(b.String())
			for i, sub := range re.Sub {
				rest := 0
				for _, later := range re.Sub[i+1:] {
					rest += minLenOf(later)
				}
				walk(sub, need-(utf8.RuneCountInString(b.String())-start)-rest)
			}
		case syntax.OpAlternate:
			walk(re.Sub[0], need)
		case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
			lo, hi := re.Min, re.Max
			switch re.Op {
			case syntax.OpStar:
				lo, hi = 0, -1
			case syntax.OpPlus:
				lo, hi = 1, -1
			case syntax.OpQuest:
				lo, hi = 0, 1
			}
			start := utf8.RuneCountInString(b.String())
			for i := 0; i < lo || (utf8.RuneCountInString(b.String())-start < need && (hi < 0 || i < hi)); i++ {
				before := b.Len()
				walk(re.Sub[0], need-(utf8.RuneCountInString(b.String())-start))
				if b.Len() == before && i >= lo {
					break // an empty repetition never grows
				}
			}
		}
	}
	walk(re, minLen)
	return b.String()
}

// pickRune picks a printable rune of a character class given as ranges,
// preferring lower-case letters and digits (identifiers' alphabet).
func pickRune(ranges []rune) rune {
	for _, want := range []rune{'a', '0', 'A'} {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= want && want <= ranges[i+1] {
				return want
			}
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < ranges[i]+128; r++ {
			if r > ' ' && r < 0x7f {
				return r
			}
		}
	}
	return ranges[0]
}

// minLenOf is the length of the shortest match of re.
func minLenOf(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture:
		return minLenOf(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n += minLenOf(sub)
		}
		return n
	case syntax.OpAlternate:
		return minLenOf(re.Sub[0])
	case syntax.OpPlus:
		return minLenOf(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minLenOf(re.Sub[0])
	}
	return 0
}

// minimalNumber is the value nearest 0 within the schema's range (the
// smallest admitted integer above an exclusive bound).
func minimalNumber(s Schema, path string) (any, error) {
	integer := typeOf(s) == "integer"
	lo, hi := math.Inf(-1), math.Inf(1)
	if v, ok := Number(s["minimum"]); ok {
		lo = v
	}
	if v, ok := Number(s["exclusiveMinimum"]); ok {
		lo = v + 1
		if !integer {
			lo = v + math.Max(1, math.Abs(v)*1e-9)
		}
	}
	if v, ok := Number(s["maximum"]); ok {
		hi = v
	}
	if v, ok := Number(s["exclusiveMaximum"]); ok {
		hi = v - 1
		if !integer {
			hi = v - math.Max(1, math.Abs(v)*1e-9)
		}
	}
	v := math.Max(lo, math.Min(0, hi))
	if integer {
		v = math.Ceil(v)
	}
	if v < lo || v > hi {
		return nil, fmt.Errorf("%w at %s: empty range", ErrNoInstance, cmpPath(path))
	}
	if integer {
		return int64(v), nil
	}
	return v, nil
}

func cmpPath(path string) string {
	if path == "" {
		return "(request)"
	}
	return path
}
