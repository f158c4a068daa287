package mcpbridge

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// compaction is how tools/list descriptions are made smaller (docs/MCP.md),
// applied once, when tools are rendered. The envelope of every result is
// abridged by default (outputschema.go); descriptions and documentation
// keys are dropped only when the operator asks, since the contract wants
// descriptions and examples (docs/CONTRACTS.md, "The checklist").
type compaction struct {
	// descMax caps each tool's description, in characters (runes), at a
	// word boundary with an ellipsis; 0 keeps it whole.
	descMax int
	// stripSchema drops non-essential keys (schemaMetaKeys) from each
	// tool's inputSchema and outputSchema, at every depth.
	stripSchema bool
	// fullSchemas lists each tool's schemas whole, envelope and
	// documentation included (outputschema.go); false lists the abridged
	// outputSchema and the inputSchema without $schema and its top-level
	// description.
	fullSchemas bool
}

// schemaMetaKeys are the JSON Schema keywords that document rather than
// constrain: dropping them leaves what an argument must
// be.
var schemaMetaKeys = []string{"description", "examples", "example", "title", "default", "$comment", "markdownDescription"}

// ellipsis ends a capped description.
const ellipsis = "…"

// capDescription normalises s (runs of white space become one space, the
// ends trimmed) and, when it is longer than max characters, cuts it at the
// last word boundary that leaves room for the ellipsis (mid-word only when
// the first word alone is too long). max <= 0 returns s unchanged.
func capDescription(s string, maxChars int) string {
	if maxChars <= 0 {
		return s
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxChars {
		return s
	}
	runes := []rune(s)
	keep := max(maxChars-utf8.RuneCountInString(ellipsis), 0)
	cut := string(runes[:keep])
	if runes[keep] != ' ' {
		// Mid-word: end at the last whole word, if there is one.
		if sp := strings.LastIndexByte(cut, ' '); sp > 0 {
			cut = cut[:sp]
		}
	}
	cut = strings.TrimRightFunc(cut, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(",;:-", r) })
	return cut + ellipsis
}

// stripSchema returns a copy of the schema s without schemaMetaKeys, at
// every depth. The names of properties (under "properties",
// "patternProperties", "$defs", "definitions", "dependentSchemas") are
// data, not keywords: a property called "title" stays.
func stripSchema(s map[string]any) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		if isMetaKey(k) {
			continue
		}
		switch k {
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
			if m, ok := v.(map[string]any); ok {
				named := make(map[string]any, len(m))
				for name, sub := range m {
					named[name] = stripValue(sub)
				}
				out[k] = named
				continue
			}
		case "enum", "const", "required":
			out[k] = v // values, not schemas
			continue
		}
		out[k] = stripValue(v)
	}
	return out
}

func stripValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return stripSchema(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripValue(e)
		}
		return out
	}
	return v
}

func isMetaKey(k string) bool {
	for _, m := range schemaMetaKeys {
		if k == m {
			return true
		}
	}
	return false
}
