package registry

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Rules of docs/CONTRACTS.md that Check applies beyond the Tool option's
// protovalidate rules.
const (
	// RuleNameVerb: the first word of a name is one of Verbs.
	RuleNameVerb = "name.verb"
	// RuleParamsDescribed: every property of the input schema, at every
	// depth, has a non-empty description.
	RuleParamsDescribed = "parameters.described"
)

// Verbs are the words a tool name may start with (docs/CONTRACTS.md, "Tool
// names"): `{verb}-{noun}`, where the verb says what the call does to the
// noun. A new verb is added here, with its meaning, and in the document.
var Verbs = map[string]string{
	"get":       "read one thing by its identity",
	"list":      "enumerate things, filtered, paged",
	"search":    "find things by relevance to a query",
	"find":      "look things up by exact criteria",
	"query":     "ask a question of a data set and get an answer",
	"show":      "read a document or record as written",
	"check":     "verify a claim or state and say whether it holds",
	"summarize": "condense many things into one answer",
	"add":       "add an item to a collection",
	"create":    "create a new thing with its own identity",
	"update":    "change fields of an existing thing",
	"set":       "give a setting or field a value, replacing the old one",
	"delete":    "remove a thing",
	"purge":     "remove many things at once",
	"sync":      "bring a copy up to date with its source",
	"tail":      "read the newest entries of a log",
	"patch":     "change part of an existing thing",
}

// VerbList returns the verbs, sorted.
func VerbList() []string {
	out := make([]string, 0, len(Verbs))
	for v := range Verbs {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// verbOf returns the first word of a kebab-case name.
func verbOf(name string) string {
	verb, _, _ := strings.Cut(name, "-")
	return verb
}

// undescribed returns the JSON paths of the properties of s, at every depth
// (properties, items, additionalProperties, $defs, combinators), that carry
// no description: docs/CONTRACTS.md requires each parameter documented.
func undescribed(s map[string]any, path string, depth int, out *[]string) {
	if s == nil || depth > 32 {
		return
	}
	if props, ok := s["properties"].(map[string]any); ok {
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sub, _ := props[k].(map[string]any)
			if d, _ := sub["description"].(string); strings.TrimSpace(d) == "" {
				*out = append(*out, path+"."+k)
			}
			undescribed(sub, path+"."+k, depth+1, out)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		undescribed(items, path+"[]", depth+1, out)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		undescribed(ap, path+"{}", depth+1, out)
	}
	for _, key := range []string{"$defs", "definitions"} {
		if defs, ok := s[key].(map[string]any); ok {
			for _, k := range sortedKeys(defs) {
				sub, _ := defs[k].(map[string]any)
				undescribed(sub, path+"#/"+key+"/"+k, depth+1, out)
			}
		}
	}
	for _, key := range []string{"oneOf", "anyOf", "allOf"} {
		if list, ok := s[key].([]any); ok {
			for i, x := range list {
				sub, _ := x.(map[string]any)
				undescribed(sub, fmt.Sprintf("%s(%s[%d])", path, key, i), depth+1, out)
			}
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// UndescribedParameters returns the JSON paths of the input schema's
// properties that have no description (empty when every one has).
func UndescribedParameters(input map[string]any) []string {
	var out []string
	undescribed(input, "", 0, &out)
	return out
}

// ChecklistItem is one line of the tool-definition checklist
// (docs/CONTRACTS.md): either enforced by named rules, or not applicable to
// a tool definition, with the reason.
type ChecklistItem struct {
	Item string
	// Rules are the rule ids that enforce the item; empty when it is not
	// applicable.
	Rules []string
	// How says how the rules enforce it, or why the item does not apply.
	How string
}

// Enforced reports whether a rule enforces the item.
func (c ChecklistItem) Enforced() bool { return len(c.Rules) > 0 }

// Checklist is the tool-definition checklist, item by item, as the
// registry enforces it; `toolsvc lint` prints it and docs/CONTRACTS.md
// lists it (a test keeps them equal).
var Checklist = []ChecklistItem{
	{"Tool has unique name in kebab-case",
		[]string{RuleContract + ".string.pattern", RuleNameVerb, RuleNameUnique},
		"name matches ^[a-z][a-z0-9]*(-[a-z0-9]+)+$, starts with a listed verb; one name@version per registry, a name two sources claim is refused"},
	{"Description is clear and complete (>50 chars)",
		[]string{RuleContract + ".string.min_len", RuleDescriptionSentences},
		"at least 50 characters, in sentences"},
	{"All parameters validated",
		[]string{RuleRequestName, RuleSchema, RuleParamsDescribed},
		"protovalidate rules on <Method>Request (JSON Schema for an MCP upstream) checked on every call; the schema is derived from them; every parameter has a description"},
	{"Permissions array defined",
		[]string{RuleContract + ".string.pattern"},
		"each permission {resource}:{action}; an empty list means none is needed"},
	{"Category specified",
		[]string{RuleContract + ".string.in", RuleMutationSideEffect},
		"one of query, mutation, analysis, generation; a mutation declares side_effect"},
	{"responseTime specified",
		[]string{RuleContract + ".string.in"},
		"one of fast, medium, slow"},
	{"cacheable flag set correctly",
		[]string{RuleContract + ".tool.mutation_cache"},
		"mutations are never cacheable"},
	{"cacheTTL set if cacheable",
		[]string{RuleContract + ".tool.cache_ttl"},
		"cache_ttl > 0 exactly when cacheable"},
	{"idempotent flag set correctly",
		[]string{RuleContract + ".tool.query_side_effect", RuleContract + ".tool.read_only", RuleDestructiveSideEffect},
		"query tools idempotent and side-effect free; read-only tools neither side-effecting nor destructive"},
	{"At least 1 example provided",
		[]string{RuleContract + ".repeated.min_items", RuleExampleParams, RuleExampleExpected},
		"at least one example; its params are a valid request, its expectation a JSON object"},
	{"At least 1 tag provided",
		[]string{RuleContract + ".repeated.min_items", RuleTagsUnique},
		"at least one tag, none twice"},
	{"Handler returns ToolResult structure",
		[]string{RuleResponseShape, RuleUnary},
		"the response message is {data, agent_hints, metadata}; tools are unary"},
	{"agentHints ALWAYS included in response", nil,
		"run-time: result.shape requires the agent_hints field and the chain refuses a fresh result without hints (INTERNAL, logged)"},
	{"agentHints.confidence calculated (not hardcoded)", nil,
		"a run-time value: internal/contract/hints computes it from the evidence a call observed and offers no way to set a constant"},
	{"agentHints.sourceQuality specified", nil,
		"a run-time value: the chain validates every result's AgentHints (source_quality required, one of high, medium, low, unknown)"},
	{"agentHints.validityPeriod specified", nil,
		"a run-time value: the chain validates every result's AgentHints, validity_period included"},
	{"agentHints.contextNeeded array present (can be empty)", nil,
		"a run-time value: JSON answers render AgentHints' repeated fields as arrays, empty ones included"},
	{"agentHints.assumptions array present (can be empty)", nil,
		"a run-time value: JSON answers render AgentHints' repeated fields as arrays, empty ones included"},
	{"agentHints.riskFactors array present (can be empty)", nil,
		"a run-time value: JSON answers render AgentHints' repeated fields as arrays, empty ones included"},
	{"agentHints.dependencies array present (can be empty)", nil,
		"a run-time value: JSON answers render AgentHints' repeated fields as arrays, empty ones included"},
	{"agentHints.estimatedImpact object present with benefit/effort/roi", nil,
		"a run-time value: the chain validates every result's AgentHints, estimated_impact included"},
	{"agentHints.preferenceAlignment array present (can be empty)", nil,
		"a run-time value: JSON answers render AgentHints' repeated fields as arrays, empty ones included"},
	{"agentHints.reasoning included (strongly recommended)", nil,
		"a run-time value each call writes (recommended, so not required of a result)"},
	{"All metadata fields populated", nil,
		"run-time: the chain fills ResultMetadata on every answer, whatever the tool"},
	{"Error handling implemented", nil,
		"run-time: every error leaves the chain as a ToolError with a code, and a result that breaks its contract is refused before it reaches an agent"},
	{"Logging added", nil,
		"run-time: the chain logs every call of every tool with its trace id; a definition cannot opt out"},
	{"Metrics emitted", nil,
		"run-time: the chain records calls, latency, errors and cache hits of every tool"},
	{"Tests written (unit + integration)", nil,
		"not a property of a definition: the examples run in internal/tests/e2e, and docs/ADDING-A-TOOL.md lists the tests a tool needs"},
	{"Tool registered in ToolRegistry",
		[]string{RuleOptionPresent, RuleDescriptor},
		"every RPC of a tool service declares (toolsvc.v1.tool) and resolves; New registers it"},
}
