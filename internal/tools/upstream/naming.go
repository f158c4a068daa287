package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

// Serving is what the operator decides of an MCP server's tools, beyond
// overlays (docs/ADDING-A-TOOL.md, "Serving a third-party MCP server"):
// the names they are served under, the verbs those names may start with,
// how their later definitions are treated, and the bulkhead around the
// upstream's calls. It is written inline in an upstream's entry.
type Serving struct {
	// Naming maps the names the server lists to the names toolsvc serves.
	Naming Naming `yaml:"naming"`
	// Verbs extends, for this upstream's tools only, the verbs a tool name
	// may start with (docs/CONTRACTS.md, "Tool names"), each with its
	// meaning: what a call does to the noun.
	Verbs map[string]string `yaml:"verbs"`
	// CloseInputSchemas closes every object of every inputSchema that names
	// its properties and says nothing of others (additionalProperties
	// absent): toolsvc then refuses arguments the tool does not name before
	// the call. It only narrows what the tool accepts; an object that
	// declares additionalProperties stays as it is (and is refused by
	// mcp.no_free_form_parameters when it admits any).
	CloseInputSchemas bool `yaml:"close_input_schemas"`
	// Definitions is pin (default: the first definition of each tool that
	// passes the checklist is the approved one, later changes are held for
	// the operator) or follow (every new definition is served at once; for
	// servers the operator owns). See pin.go.
	Definitions string `yaml:"definitions"`
	// Pins pins tools' definitions by the upstream's tool name: the
	// fingerprint (sha256:…, as the operator view shows it) of the only
	// definition served.
	Pins map[string]string `yaml:"pins"`
	// MaxInFlight bounds the calls in flight to this upstream; beyond it a
	// call fails at once with RATE_LIMITED. Default DefaultMaxInFlight.
	MaxInFlight int `yaml:"max_in_flight"`
	// Circuit is the upstream's circuit breaker.
	Circuit Circuit `yaml:"circuit"`

	mcpOverlays map[string]*mcpOverlay
}

// Naming maps an MCP server's tool names to the names toolsvc serves. The
// mapping is a function of the name and the file only, so names are stable
// across restarts and replicas; two tools that would map to one name are
// both refused (mcp.name), never served one for the other.
type Naming struct {
	// KebabCase turns snake_case into kebab-case (read_file → read-file).
	KebabCase bool `yaml:"kebab_case"`
	// Namespace, when set, is inserted after the verb of every name that
	// Renames does not give: read-file → read-fs-file. It keeps names of
	// several servers apart while every name still starts with its verb.
	Namespace string `yaml:"namespace"`
	// Renames gives the served name of a tool by the name the server lists
	// (directory_tree: get-directory-tree); it wins over the rules above.
	Renames map[string]string `yaml:"renames"`
}

// mcpOverlay is what an MCP tool's overlay may say beyond the
// (toolsvc.v1.tool) fields: the schemas the tool's author did not write.
type mcpOverlay struct {
	// inputSchema and outputSchema replace the tool's.
	inputSchema, outputSchema json.RawMessage
	// parameters describe the inputSchema's properties by path (path,
	// edits[].oldText): each must exist.
	parameters map[string]string
	// contentAsData serves a result that has no structuredContent (a
	// server that answers in content blocks only) as the data
	// {"content": [blocks]}, checked against the output schema the overlay
	// gives, as any data (content_as_data: true).
	contentAsData bool
}

// mcpOverlayKeys are the overlay keys of an MCP tool that are not fields
// of (toolsvc.v1.tool).
var mcpOverlayKeys = []string{"input_schema", "output_schema", "parameters", "content_as_data"}

var (
	verbRE      = regexp.MustCompile(`^[a-z][a-z0-9]{1,30}$`)
	namespaceRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,30}$`)
)

// completeServing checks the serving options of an entry.
func (u *Config) completeServing() []error {
	var errs []error
	s := &u.Serving
	if u.MCP == nil {
		if s.Naming.KebabCase || s.Naming.Namespace != "" || len(s.Naming.Renames) > 0 || len(s.Verbs) > 0 ||
			s.CloseInputSchemas || s.Definitions != "" || len(s.Pins) > 0 {
			errs = append(errs, errors.New("naming, verbs, close_input_schemas, definitions and pins apply to an MCP server's tools; a gRPC service's are its protos' (use overlays)"))
		}
	}
	for _, v := range sortedKeys(anyMap(s.Verbs)) {
		meaning := strings.TrimSpace(s.Verbs[v])
		switch {
		case !verbRE.MatchString(v):
			errs = append(errs, fmt.Errorf("verbs: %q: want one lower-case word", v))
		case registry.Verbs[v] != "":
			errs = append(errs, fmt.Errorf("verbs: %q is already a verb (%s); remove it", v, registry.Verbs[v]))
		case len(strings.Fields(meaning)) < 3:
			errs = append(errs, fmt.Errorf("verbs: %q needs its meaning, what a call does to the noun, in a few words (docs/CONTRACTS.md, \"Tool names\")", v))
		}
	}
	if n := s.Naming.Namespace; n != "" && !namespaceRE.MatchString(n) {
		errs = append(errs, fmt.Errorf("naming.namespace %q: want one lower-case word", n))
	}
	targets := map[string]string{}
	for _, from := range sortedKeys(anyMap(s.Naming.Renames)) {
		to := s.Naming.Renames[from]
		if !toolNameRE.MatchString(to) {
			errs = append(errs, fmt.Errorf("naming.renames[%s]: %q: want a {verb}-{noun} name in lower-case kebab case", from, to))
		}
		if other, ok := targets[to]; ok {
			errs = append(errs, fmt.Errorf("naming.renames: %s and %s are both renamed %s", other, from, to))
		}
		targets[to] = from
	}
	switch s.Definitions {
	case "":
		s.Definitions = DefinitionsPin
	case DefinitionsPin, DefinitionsFollow:
	default:
		errs = append(errs, fmt.Errorf("definitions %q: want pin (the default) or follow", s.Definitions))
	}
	for _, tool := range sortedKeys(anyMap(s.Pins)) {
		if !fingerprintRE.MatchString(s.Pins[tool]) {
			errs = append(errs, fmt.Errorf("pins[%s]: %q: want sha256: and 64 hex digits, as the operator view shows a definition's fingerprint", tool, s.Pins[tool]))
		}
	}
	if len(s.Pins) > 0 && s.Definitions == DefinitionsFollow {
		errs = append(errs, errors.New("pins: definitions follow serves every new definition; pins need definitions: pin"))
	}
	errs = append(errs, s.completeBulkhead()...)
	return errs
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// splitMCPOverlay takes the keys of mcpOverlayKeys out of an MCP tool's
// overlay, leaving the (toolsvc.v1.tool) fields.
func splitMCPOverlay(raw any) (any, *mcpOverlay, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return raw, nil, nil
	}
	rest := map[string]any{}
	var o *mcpOverlay
	for k, v := range m {
		if !slices.Contains(mcpOverlayKeys, k) {
			rest[k] = v
			continue
		}
		if o == nil {
			o = &mcpOverlay{}
		}
		switch k {
		case "input_schema", "output_schema":
			if _, ok := v.(map[string]any); !ok {
				return nil, nil, fmt.Errorf("%s: want a JSON Schema object", k)
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", k, err)
			}
			if k == "input_schema" {
				o.inputSchema = b
			} else {
				o.outputSchema = b
			}
		case "content_as_data":
			b, ok := v.(bool)
			if !ok {
				return nil, nil, errors.New("content_as_data: want true or false")
			}
			if b {
				if _, ok := m["output_schema"].(map[string]any); !ok {
					return nil, nil, errors.New("content_as_data: give the output_schema of {content: [blocks]} the results are checked against")
				}
			}
			o.contentAsData = b
		case "parameters":
			ps, ok := v.(map[string]any)
			if !ok {
				return nil, nil, errors.New("parameters: want a map of parameter paths to descriptions")
			}
			o.parameters = map[string]string{}
			for p, d := range ps {
				ds, ok := d.(string)
				if !ok || strings.TrimSpace(ds) == "" {
					return nil, nil, fmt.Errorf("parameters[%s]: want a description", p)
				}
				o.parameters[p] = ds
			}
		}
	}
	return rest, o, nil
}

// servedName maps the name an MCP server lists to the name toolsvc serves.
func (n Naming) servedName(listed string) string {
	if to, ok := n.Renames[listed]; ok {
		return to
	}
	name := listed
	if n.KebabCase {
		name = strings.ReplaceAll(name, "_", "-")
	}
	if n.Namespace != "" {
		if verb, rest, ok := strings.Cut(name, "-"); ok {
			name = verb + "-" + n.Namespace + "-" + rest
		}
	}
	return name
}

// applyOverlay returns d with the schemas the operator supplied: the
// overlay's input and output schemas replace the server's, its parameter
// descriptions are set, and with close_input_schemas the inputSchema's
// open objects are closed. An error names what the overlay got wrong.
func (s *Serving) applyOverlay(d mcpToolDesc, o *mcpOverlay) (mcpToolDesc, error) {
	if o != nil && o.inputSchema != nil {
		d.InputSchema = o.inputSchema
	}
	if o != nil && o.outputSchema != nil {
		d.OutputSchema = o.outputSchema
	}
	if (o == nil || len(o.parameters) == 0) && !s.CloseInputSchemas {
		return d, nil
	}
	if len(d.InputSchema) == 0 {
		return d, nil // mcp.input_schema says why
	}
	var in map[string]any
	if err := json.Unmarshal(d.InputSchema, &in); err != nil || in == nil {
		return d, nil // mcp.input_schema says why
	}
	if o != nil {
		for _, p := range sortedKeys(anyMap(o.parameters)) {
			prop := propertyAt(in, p)
			if prop == nil {
				return d, fmt.Errorf("overlay parameters[%s]: the inputSchema has no such property", p)
			}
			prop["description"] = o.parameters[p]
		}
	}
	if s.CloseInputSchemas {
		closeObjects(in, 0)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return d, err
	}
	d.InputSchema = b
	return d, nil
}

// propertyAt finds the property schema at a path: names separated by
// dots, [] stepping into an array's items (edits[].oldText).
func propertyAt(s map[string]any, path string) map[string]any {
	cur := s
	for part := range strings.SplitSeq(path, ".") {
		name, items := strings.CutSuffix(part, "[]")
		props, _ := cur["properties"].(map[string]any)
		next, _ := props[name].(map[string]any)
		if next == nil {
			return nil
		}
		if items {
			if next, _ = next["items"].(map[string]any); next == nil {
				return nil
			}
		}
		cur = next
	}
	return cur
}

// closeObjects sets additionalProperties: false on every object schema
// in s that names its properties and says nothing of others.
func closeObjects(s map[string]any, depth int) {
	if depth > 32 {
		return
	}
	props, hasProps := s["properties"].(map[string]any)
	if (hasProps || hasType(s, "object")) && s["additionalProperties"] == nil && s["patternProperties"] == nil {
		s["additionalProperties"] = false
	}
	for _, p := range props {
		if sub, ok := p.(map[string]any); ok {
			closeObjects(sub, depth+1)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		closeObjects(items, depth+1)
	}
	for _, key := range []string{"$defs", "definitions"} {
		if defs, ok := s[key].(map[string]any); ok {
			for _, x := range defs {
				if sub, ok := x.(map[string]any); ok {
					closeObjects(sub, depth+1)
				}
			}
		}
	}
	// allOf is left alone: closing each of its parts would refuse what
	// the parts describe together.
	for _, key := range []string{"anyOf", "oneOf"} {
		if subs, ok := s[key].([]any); ok {
			for _, x := range subs {
				if sub, ok := x.(map[string]any); ok {
					closeObjects(sub, depth+1)
				}
			}
		}
	}
}

// checkListed checks one tool as the server lists it, under the name and
// with the schemas the operator gave it.
func (u *Upstream) checkListed(d mcpToolDesc) (*mcpTool, []RefusedTool) {
	orig := d
	served := u.cfg.Naming.servedName(d.Name)
	d, err := u.cfg.applyOverlay(d, u.cfg.mcpOverlays[orig.Name])
	if err != nil {
		return nil, []RefusedTool{{Tool: served, Rule: RuleMCPDefinition, Message: err.Error()}}
	}
	d.Name = served
	t, refusals := checkMCPTool(u.cfg.Name, d, u.cfg.overlays[orig.Name], trustOf(u.cfg))
	if t == nil {
		if served != orig.Name {
			for i := range refusals {
				refusals[i].Message += " (the server lists it as " + orig.Name + ")"
			}
		}
		return nil, refusals
	}
	t.listed, t.orig = orig.Name, orig
	return t, nil
}

// uniqueNames refuses every tool whose served name another tool of the
// server also maps to: neither is served in place of the other.
func (u *Upstream) uniqueNames(tools []*mcpTool) []*mcpTool {
	by := map[string][]string{}
	for _, t := range tools {
		by[t.desc.Name] = append(by[t.desc.Name], t.listed)
	}
	return slices.DeleteFunc(tools, func(t *mcpTool) bool {
		if len(by[t.desc.Name]) < 2 {
			return false
		}
		u.refused = append(u.refused, RefusedTool{Tool: t.desc.Name, Rule: RuleMCPName,
			Message: fmt.Sprintf("the server's tools %s all map to this name: rename them (naming.renames)", strings.Join(by[t.desc.Name], ", "))})
		return true
	})
}

// ServingHealth is an MCP server's serving options on the operator view:
// every name mapped, the verbs added with their meanings, the tools given
// an overlay and what each overlay supplies, and the definitions mode.
type ServingHealth struct {
	// Names maps the server's names to the served ones, when they differ.
	Names             map[string]string   `json:"names,omitempty"`
	Verbs             map[string]string   `json:"verbs,omitempty"`
	Overlays          map[string][]string `json:"overlays,omitempty"`
	CloseInputSchemas bool                `json:"close_input_schemas,omitempty"`
	Definitions       string              `json:"definitions"`
	Pins              map[string]string   `json:"pins,omitempty"`
}

// servingHealth is nil for a gRPC service. Called with u.mu held.
func (u *Upstream) servingHealth() *ServingHealth {
	if u.cfg.MCP == nil {
		return nil
	}
	h := &ServingHealth{Verbs: u.cfg.Verbs, CloseInputSchemas: u.cfg.CloseInputSchemas, Definitions: u.cfg.Definitions, Pins: u.cfg.Pins}
	for name, listed := range u.names {
		if name != listed {
			if h.Names == nil {
				h.Names = map[string]string{}
			}
			h.Names[listed] = name
		}
	}
	for tool, raw := range u.cfg.Overlays {
		var fields []string
		if m, ok := raw.(map[string]any); ok {
			fields = sortedKeys(m)
		}
		if h.Overlays == nil {
			h.Overlays = map[string][]string{}
		}
		h.Overlays[tool] = fields
	}
	return h
}
