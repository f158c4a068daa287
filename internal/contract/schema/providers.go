package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Provider names used in Problem.Provider.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderGemini    = "gemini"
)

// Rule codes used in Problem.Rule. They are stable identifiers: callers and
// tests compare them, humans read Problem.String.
const (
	// RuleRootNotObject: the root schema is not {"type":"object"}.
	RuleRootNotObject = "root-not-object"
	// RuleRootCombinator: anyOf/oneOf/allOf/enum/not at the root.
	RuleRootCombinator = "root-combinator"
	// RuleTypeArray: "type" is an array (a type union).
	RuleTypeArray = "type-array"
	// RuleRef: $ref, $defs or another reference keyword.
	RuleRef = "ref"
	// RuleUnsupportedKeyword: a keyword outside the provider's supported set.
	RuleUnsupportedKeyword = "unsupported-keyword"
	// RuleOpenObject: an object whose additionalProperties is not false.
	RuleOpenObject = "additional-properties-not-false"
	// RuleMissingType: a schema without "type" (nor enum/const).
	RuleMissingType = "missing-type"
	// RuleEnumValueType: an enum value of a type the provider cannot take.
	RuleEnumValueType = "enum-value-type"
	// RuleNestingDepth: objects nested deeper than the provider allows.
	RuleNestingDepth = "nesting-depth"
	// RulePropertyCount: more object properties in total than allowed.
	RulePropertyCount = "property-count"
	// RuleEnumCount: more enum values in total than allowed.
	RuleEnumCount = "enum-count"
	// RuleStringLength: property names, enum and const values too long in total.
	RuleStringLength = "string-length"
	// RuleLargeEnumLength: an enum of more than 250 strings longer than allowed.
	RuleLargeEnumLength = "large-enum-string-length"
)

// Problem is one way a schema breaks a provider's tool-schema rules.
type Problem struct {
	// Provider is ProviderOpenAI, ProviderAnthropic or ProviderGemini.
	Provider string
	// Path is a JSON pointer (RFC 6901) into the schema: to the offending
	// keyword, or to the schema that breaks the rule ("" is the root).
	Path string
	// Rule is one of the Rule* codes.
	Rule string
}

// String formats the problem for logs and lint output.
func (p Problem) String() string {
	path := p.Path
	if path == "" {
		path = "(root)"
	}
	return fmt.Sprintf("%s: %s: %s", p.Provider, path, p.Rule)
}

// OpenAI strict-mode limits, from "Structured Outputs: supported schemas"
// (platform.openai.com/docs/guides/structured-outputs#supported-schemas).
const (
	openAIMaxDepth         = 10
	openAIMaxProperties    = 5000
	openAIMaxEnumValues    = 1000
	openAIMaxStringLength  = 120_000
	openAILargeEnum        = 250
	openAILargeEnumLengths = 15_000
)

// vocabulary2020 is every keyword of JSON Schema draft 2020-12 (core,
// applicator, unevaluated, validation, format, content, meta-data).
var vocabulary2020 = set(
	"$schema", "$id", "$ref", "$defs", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment",
	"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
	"prefixItems", "items", "contains", "properties", "patternProperties", "additionalProperties", "propertyNames",
	"unevaluatedItems", "unevaluatedProperties",
	"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
	"maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
	"maxProperties", "minProperties", "required", "dependentRequired",
	"format", "contentEncoding", "contentMediaType", "contentSchema",
	"title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
)

// narrowing are keywords that only annotate or narrow the accepted values.
// A provider that accepts but ignores them lets the model produce a value the
// server then rejects with an actionable INVALID_INPUT; it never changes the
// shape of the payload. They are therefore tolerated where a provider
// accepts them without enforcing them.
var narrowing = set(
	"$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
	"const", "pattern", "format", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
	"exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
	"propertyNames", "contentEncoding", "contentMediaType",
)

// profile encodes one provider's rules.
type profile struct {
	name string
	// keywords the provider accepts where toolsvc puts the schema.
	keywords map[string]bool
	// typeArrays, refs: whether type unions and references are accepted.
	typeArrays, refs bool
	// requireType: every schema needs a type (or enum/const).
	requireType bool
	// closedObjects: every object needs additionalProperties false.
	closedObjects bool
	// scalarEnums: enum values must be strings or numbers.
	scalarEnums bool
	// limits: apply the OpenAI size limits.
	limits bool
}

// profiles are the providers CheckProviders checks, with the documented rules
// each encodes. Where a document is silent, the profile is conservative.
var profiles = []profile{
	{
		// OpenAI function calling, held to the strict-mode (Structured
		// Outputs) shape rules: supported keywords are type, description,
		// title, properties, required, additionalProperties, items, enum,
		// const, anyOf (not at the root), $ref/$defs, string pattern/format,
		// number minimum/maximum/exclusive*/multipleOf, array
		// minItems/maxItems; allOf, not, if/then/else, dependentRequired,
		// dependentSchemas, patternProperties, unevaluated* and contains are
		// not supported. additionalProperties must be false on every object,
		// with at most 10 levels of nesting, 5,000 properties, 1,000 enum
		// values and 120,000 characters of names and values.
		//
		// Strict mode also wants every property listed in "required", with
		// optional ones typed as ["T","null"]. That rule is NOT applied:
		// proto3 optional fields would need type unions, which this package
		// never emits. toolsvc therefore targets strict-compatible *shape*
		// and sends tools non-strict, where the narrowing keywords are
		// accepted and the server enforces them.
		name:          ProviderOpenAI,
		keywords:      union(narrowing, set("properties", "required", "additionalProperties", "items", "enum", "anyOf", "$ref", "$defs", "type")),
		typeArrays:    false, // strict mode documents them only for ["T","null"]; toolsvc never needs them
		refs:          true,
		requireType:   true,
		closedObjects: true,
		limits:        true,
	},
	{
		// Anthropic tool use: input_schema is a JSON Schema whose root must
		// be {"type":"object"}; oneOf, anyOf and allOf are rejected at the
		// top level ("input_schema does not support oneOf, allOf, or anyOf
		// at the top level"). Below the root any standard draft 2020-12
		// keyword is accepted; non-standard ones (such as OpenAPI's
		// "nullable") are flagged.
		name:       ProviderAnthropic,
		keywords:   vocabulary2020,
		typeArrays: true,
		refs:       true,
	},
	{
		// Gemini FunctionDeclaration.parametersJsonSchema, the only Gemini
		// field that takes additionalProperties (which the tool contract requires;
		// the OpenAPI-subset "parameters" field rejects it, and $schema,
		// const, uniqueItems, exclusiveMinimum... with 400 "Unknown name").
		// Documented keywords: $id, $defs, $ref, $anchor, type, format,
		// title, description, enum (strings and numbers), items,
		// prefixItems, minItems, maxItems, minimum, maximum, anyOf, oneOf,
		// properties, additionalProperties, required, propertyOrdering.
		// parametersJsonSchema drops other keywords instead of rejecting
		// them (googleapis/python-genai#1093), so the narrowing ones are
		// tolerated; the shape-changing ones (allOf, not, if/then/else,
		// patternProperties, dependent*, unevaluated*, contains) are not.
		// Conservatively, type unions and references are flagged: Gemini
		// maps each schema to a single OpenAPI type and rejects cyclic
		// references in required properties.
		name: ProviderGemini,
		keywords: union(narrowing, set("$defs", "$ref", "$anchor", "type", "enum", "items", "prefixItems",
			"anyOf", "oneOf", "properties", "additionalProperties", "required", "propertyOrdering")),
		requireType: true,
		scalarEnums: true,
	},
}

// rootCombinators may not appear at the root for any provider.
var rootCombinators = []string{"anyOf", "oneOf", "allOf", "enum", "not"}

// refKeywords reference other schemas.
var refKeywords = []string{"$ref", "$defs", "definitions", "$dynamicRef"}

// CheckProviders checks s against the tool-schema rules of OpenAI, Anthropic
// and Gemini (see the profiles for the rules and their sources) and returns
// the problems sorted by path, provider and rule, or nil when s is
// compatible with all three. s may be a derived schema or one decoded from
// JSON (nested maps, []any lists).
//
// A schema from Derive passes unless the contract itself cannot be
// expressed for a provider: maps, Struct and Any fields are open objects
// (flagged for OpenAI), a google.protobuf.Value has no type (flagged for
// OpenAI and Gemini), and large contracts may exceed OpenAI's limits.
func CheckProviders(s Schema) []Problem {
	var problems []Problem
	for i := range profiles {
		c := checker{p: &profiles[i]}
		c.root(s)
		problems = append(problems, c.problems...)
	}
	slices.SortFunc(problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Rule, b.Rule))
	})
	return problems
}

// checker walks one schema for one provider.
type checker struct {
	p        *profile
	problems []Problem
	// running totals for the OpenAI limits, and whether each was reported.
	properties, enums, chars     int
	deepReported, propsReported  bool
	enumsReported, charsReported bool
}

func (c *checker) report(path, rule string) {
	c.problems = append(c.problems, Problem{Provider: c.p.name, Path: path, Rule: rule})
}

// root applies the root rules, then walks the tree.
func (c *checker) root(s Schema) {
	if s["type"] != "object" {
		c.report("", RuleRootNotObject)
	}
	for _, k := range rootCombinators {
		if _, ok := s[k]; ok {
			c.report(pointer("", k), RuleRootCombinator)
		}
	}
	c.walk(s, "", 0)
}

// walk checks one schema and recurses into its subschemas; depth counts the
// enclosing object schemas.
func (c *checker) walk(s map[string]any, path string, depth int) {
	for _, k := range sortedKeys(s) {
		if !c.p.keywords[k] && !slices.Contains(refKeywords, k) {
			c.report(pointer(path, k), RuleUnsupportedKeyword)
		}
	}
	if !c.p.refs {
		for _, k := range refKeywords {
			if _, ok := s[k]; ok {
				c.report(pointer(path, k), RuleRef)
			}
		}
	}

	typ, hasType := s["type"]
	switch typ.(type) {
	case []any, []string:
		if !c.p.typeArrays {
			c.report(pointer(path, "type"), RuleTypeArray)
		}
	}
	_, hasEnum := s["enum"]
	_, hasConst := s["const"]
	_, hasAnyOf := s["anyOf"]
	_, hasRef := s["$ref"]
	if c.p.requireType && !hasType && !hasEnum && !hasConst && !hasAnyOf && !hasRef {
		c.report(path, RuleMissingType)
	}

	_, hasProps := s["properties"]
	isObject := typ == "object" || hasProps
	if isObject {
		depth++
		if c.p.closedObjects && s["additionalProperties"] != false {
			c.report(path, RuleOpenObject)
		}
		if c.p.limits && depth > openAIMaxDepth && !c.deepReported {
			c.deepReported = true
			c.report(path, RuleNestingDepth)
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		c.checkEnum(enum, path)
	}
	if v, ok := s["const"].(string); ok {
		c.addChars(len(v), path)
	}
	c.children(s, path, depth)
}

// checkEnum applies the enum value rules and limits.
func (c *checker) checkEnum(enum []any, path string) {
	p := pointer(path, "enum")
	length := 0
	for _, v := range enum {
		switch v := v.(type) {
		case string:
			length += len(v)
		case float64, int, int64, uint64:
		default:
			if c.p.scalarEnums {
				c.report(p, RuleEnumValueType)
				return
			}
		}
	}
	if !c.p.limits {
		return
	}
	c.enums += len(enum)
	if c.enums > openAIMaxEnumValues && !c.enumsReported {
		c.enumsReported = true
		c.report(p, RuleEnumCount)
	}
	if len(enum) > openAILargeEnum && length > openAILargeEnumLengths {
		c.report(p, RuleLargeEnumLength)
	}
	c.addChars(length, p)
}

// addChars counts characters toward the OpenAI total string length.
func (c *checker) addChars(n int, path string) {
	if !c.p.limits {
		return
	}
	c.chars += n
	if c.chars > openAIMaxStringLength && !c.charsReported {
		c.charsReported = true
		c.report(path, RuleStringLength)
	}
}

// children recurses into every subschema position of draft 2020-12.
func (c *checker) children(s map[string]any, path string, depth int) {
	for _, k := range []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"} {
		m, ok := s[k].(map[string]any)
		if !ok {
			continue
		}
		for _, name := range sortedKeys(m) {
			if k == "properties" && c.p.limits {
				c.properties++
				if c.properties > openAIMaxProperties && !c.propsReported {
					c.propsReported = true
					c.report(pointer(pointer(path, k), name), RulePropertyCount)
				}
				c.addChars(len(name), pointer(pointer(path, k), name))
			}
			c.sub(m[name], pointer(pointer(path, k), name), depth)
		}
	}
	for _, k := range []string{"items", "additionalProperties", "propertyNames", "contains", "not", "if", "then",
		"else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"} {
		if v, ok := s[k]; ok {
			c.sub(v, pointer(path, k), depth)
		}
	}
	for _, k := range []string{"prefixItems", "anyOf", "oneOf", "allOf"} {
		list, _ := s[k].([]any)
		for i, v := range list {
			c.sub(v, pointer(path, k)+"/"+strconv.Itoa(i), depth)
		}
	}
}

// sub walks a subschema; boolean schemas (true/false) have nothing to check.
func (c *checker) sub(v any, path string, depth int) {
	if m, ok := v.(map[string]any); ok {
		c.walk(m, path, depth)
	}
}

// pointer appends one escaped reference token (RFC 6901) to a JSON pointer.
func pointer(base, token string) string {
	token = strings.ReplaceAll(token, "~", "~0")
	token = strings.ReplaceAll(token, "/", "~1")
	return base + "/" + token
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func union(sets ...map[string]bool) map[string]bool {
	m := map[string]bool{}
	for _, s := range sets {
		for k := range s {
			m[k] = true
		}
	}
	return m
}
