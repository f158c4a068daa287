package upstream

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// Rules of the tool contract an upstream MCP server's tool is
// checked against before the registry's checklist; a tool breaking one is
// refused (on /healthz and in `toolsvc lint`) and not served.
const (
	RuleMCPName         = "mcp.name"
	RuleMCPDescription  = "mcp.description"
	RuleMCPInputSchema  = "mcp.input_schema"
	RuleMCPOutputSchema = "mcp.output_schema"
	RuleMCPFreeForm     = "mcp.no_free_form_parameters"
	// RuleMCPParameterDescription: a property of the inputSchema, at any
	// depth, has no description (docs/CONTRACTS.md: every parameter is
	// documented).
	RuleMCPParameterDescription = "mcp.parameter_description"
	RuleMCPDefinition           = "mcp.definition"
	// RuleMCPPermissionNamespace: a permission the server declares for its
	// own tool lies outside {upstream}:… and the operator's upstreams file
	// neither allows it (allow_permissions) nor replaces it (an overlay's
	// permissions).
	RuleMCPPermissionNamespace = "mcp.permission_namespace"
)

// Claims of an upstream's own tool definitions that change how toolsvc
// treats its calls; each takes effect only when the upstreams file lists
// it under the upstream's allow_claims (an overlay setting the field
// always does).
const (
	// ClaimReadOnly: readOnlyHint or _meta readOnly makes a query, with no
	// side effect (its audit record is not awaited before the answer) and
	// idempotent (retried).
	ClaimReadOnly = "read_only"
	// ClaimIdempotent: idempotentHint or _meta idempotent makes a mutation
	// retried.
	ClaimIdempotent = "idempotent"
	// ClaimCacheable: _meta cacheable and cacheTtl make results cached.
	ClaimCacheable = "cacheable"
)

// trust is what the operator lets an upstream's own claims decide.
type trust struct {
	permissions []string // allowed outside the namespace
	claims      []string
	verbs       map[string]string // configured for the upstream
}

func trustOf(cfg Config) trust {
	return trust{permissions: cfg.AllowPermissions, claims: cfg.AllowClaims, verbs: cfg.Verbs}
}

func (t trust) allows(claim string) bool { return slices.Contains(t.claims, claim) }

// MetaToolKey is the _meta key under which an MCP server written for
// toolsvc may give a tool's definition, written like the (toolsvc.v1.tool)
// option's fields (version, permissions, tags, examples, ...).
const MetaToolKey = "toolsvc/tool"

// mcpToolDesc is a tool as an MCP server lists it.
type mcpToolDesc struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  struct {
		Title           string `json:"title"`
		ReadOnlyHint    *bool  `json:"readOnlyHint"`
		DestructiveHint *bool  `json:"destructiveHint"`
		IdempotentHint  *bool  `json:"idempotentHint"`
		OpenWorldHint   *bool  `json:"openWorldHint"`
	} `json:"annotations"`
	Meta map[string]json.RawMessage `json:"_meta"`
}

// mcpTool is an upstream MCP tool that passed the tool contract (docs/CONTRACTS.md).
type mcpTool struct {
	desc mcpToolDesc
	// listed is the name the server lists (desc.Name is the served one,
	// naming.go); orig the definition as the server lists it, before
	// overlays, which pinning fingerprints (pin.go).
	listed string
	orig   mcpToolDesc

	method string // the synthetic RPC's name
	spec   *toolsvcv1.Tool
	// input and output are the schemas as agents see them; inputCheck and
	// outputCheck their compiled forms.
	input, output           map[string]any
	inputCheck, outputCheck *jsonschema.Schema
	envelope                protoreflect.MessageDescriptor // set once the file is built
	// op, when set, makes the tool one of the upstream's resources and
	// prompts served as tools (federate.go), not a tool it lists.
	op int
}

// checkMCPTool checks one listed tool against the tool contract
// (docs/CONTRACTS.md) (name and its verb, description, inputSchema and
// outputSchema present and valid, no free-form parameters) and builds its
// definition. It reports every problem it finds, each naming its rule, so
// that an operator fixes a tool in one round (`toolsvc lint --upstreams`);
// a check that needs what an earlier one refused is skipped.
func checkMCPTool(upstream string, d mcpToolDesc, overlay *toolsvcv1.Tool, tr trust) (*mcpTool, []RefusedTool) {
	var refused []RefusedTool
	refuse := func(rule, format string, args ...any) {
		refused = append(refused, RefusedTool{Tool: cmp.Or(d.Name, "(unnamed)"), Rule: rule, Message: fmt.Sprintf(format, args...)})
	}
	if !toolNameRE.MatchString(d.Name) {
		refuse(RuleMCPName, "name %q: want a {verb}-{noun} name in lower-case kebab case", d.Name)
	} else if verb, _, _ := strings.Cut(d.Name, "-"); registry.Verbs[verb] == "" && tr.verbs[verb] == "" {
		refuse(registry.RuleNameVerb, "name %q: %q is not one of the verbs a tool name may start with (%s; the upstreams file may add one, with its meaning, under verbs)",
			d.Name, verb, strings.Join(registry.VerbList(), ", "))
	}
	if strings.TrimSpace(d.Description) == "" {
		refuse(RuleMCPDescription, "the tool has no description")
	}
	t := &mcpTool{desc: d, listed: d.Name, orig: d, method: methodName(d.Name)}
	var err error
	inputOK := false
	switch {
	case len(d.InputSchema) == 0:
		refuse(RuleMCPInputSchema, "the tool has no inputSchema")
	default:
		if t.input, t.inputCheck, err = compileSchema(d.InputSchema, "input"); err != nil {
			refuse(RuleMCPInputSchema, "inputSchema: %v", err)
			break
		}
		inputOK = true
		if path := freeForm(t.input, "", 0); path != "" {
			refuse(RuleMCPFreeForm, "inputSchema%s accepts properties it does not name: every object must list its properties and set additionalProperties: false", path)
		}
		if missing := registry.UndescribedParameters(t.input); len(missing) > 0 {
			refuse(RuleMCPParameterDescription, "inputSchema properties without a description: %s; every parameter must say what it is", strings.Join(missing, ", "))
		}
	}
	switch {
	case len(d.OutputSchema) == 0:
		refuse(RuleMCPOutputSchema, "the tool has no outputSchema: its results could not be checked, so it is not served")
	default:
		if t.output, t.outputCheck, err = compileSchema(d.OutputSchema, "output"); err != nil {
			refuse(RuleMCPOutputSchema, "outputSchema: %v", err)
		} else if _, ok := t.output["properties"].(map[string]any); !ok {
			refuse(RuleMCPOutputSchema, "outputSchema must describe structuredContent as an object with properties")
		}
	}
	if inputOK {
		spec, err := mcpSpec(upstream, d, t.input, overlay, tr)
		var pe *permissionError
		switch {
		case errors.As(err, &pe):
			refuse(RuleMCPPermissionNamespace, "%v", err)
		case err != nil:
			refuse(RuleMCPDefinition, "%v", err)
		}
		t.spec = spec
	}
	if len(refused) > 0 {
		return nil, refused
	}
	return t, nil
}

// toolNameRE is what a tool name must be to become an RPC name; the
// registry's checklist then holds it to {verb}-{noun}.
var toolNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)+$`)

// methodName turns a tool name into an RPC name: list-deployments →
// ListDeployments.
func methodName(tool string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(tool, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// refuseLoader refuses every $ref outside the schema itself: an upstream's
// schema must not make toolsvc read files or fetch URLs.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("$ref %s: only references inside the schema are followed", url)
}

// compileSchema parses and compiles one of a tool's schemas (JSON Schema
// 2020-12 unless it says otherwise). It must be an object schema.
func compileSchema(raw json.RawMessage, which string) (map[string]any, *jsonschema.Schema, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		return nil, nil, errors.New("not a JSON object")
	}
	if !hasType(doc, "object") {
		return nil, nil, errors.New(`the schema's type must be "object"`)
	}
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, errors.New("not JSON")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	url := "urn:toolsvc:upstream:" + which
	if err := c.AddResource(url, parsed); err != nil {
		return nil, nil, err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, nil, errors.New(firstLine(err.Error()))
	}
	return doc, sch, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// hasType reports whether s's type is t (or a list containing it).
func hasType(s map[string]any, t string) bool {
	switch v := s["type"].(type) {
	case string:
		return v == t
	case []any:
		for _, x := range v {
			if x == t {
				return true
			}
		}
	}
	return false
}

// freeForm returns the JSON path of the first object in s that accepts
// properties it does not name ("" if none): the tool contract allows no free-form
// or undocumented parameters.
func freeForm(s map[string]any, path string, depth int) string {
	at := cmp.Or(path, " (top level)")
	if depth > 32 {
		return at
	}
	if hasType(s, "object") || s["properties"] != nil {
		if _, ok := s["patternProperties"]; ok {
			return at
		}
		if !closed(s["additionalProperties"]) {
			return at
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, k := range sortedKeys(props) {
			if sub, ok := props[k].(map[string]any); ok {
				if p := freeForm(sub, path+"."+k, depth+1); p != "" {
					return p
				}
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		if p := freeForm(items, path+"[]", depth+1); p != "" {
			return p
		}
	}
	for _, key := range []string{"$defs", "definitions"} {
		if defs, ok := s[key].(map[string]any); ok {
			for _, k := range sortedKeys(defs) {
				if sub, ok := defs[k].(map[string]any); ok {
					if p := freeForm(sub, path+"."+key+"."+k, depth+1); p != "" {
						return p
					}
				}
			}
		}
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		if subs, ok := s[key].([]any); ok {
			for i, x := range subs {
				if sub, ok := x.(map[string]any); ok {
					if p := freeForm(sub, fmt.Sprintf("%s.%s[%d]", path, key, i), depth+1); p != "" {
						return p
					}
				}
			}
		}
	}
	return ""
}

// closed reports whether additionalProperties admits nothing: false, or
// the schema {"not": {}} some libraries write for it.
func closed(v any) bool {
	switch a := v.(type) {
	case bool:
		return !a
	case map[string]any:
		not, ok := a["not"].(map[string]any)
		return ok && len(a) == 1 && len(not) == 0
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// mcpSpec is an MCP tool's definition: what the tool says of itself (name,
// title, description, annotations), toolsvc's defaults for what MCP has no
// word for, the definition under _meta["toolsvc/tool"], then the
// upstreams file's overlay: each field either sets replaces the one
// before. Defaults: version 1.0.0; a read-only tool is a query needing
// permission {upstream}:read, any other a mutation needing
// {upstream}:write, destructive and open-world unless its annotations say
// otherwise (MCP's defaults); tags mcp and the upstream's name; examples
// from the inputSchema's examples.
//
// The server's own word (annotations and _meta) is then held to what the
// operator gave the upstream (docs/CONTRACTS.md: an upstream is untrusted): a
// permission outside {upstream}:… is refused (a *permissionError) unless
// allow_permissions lists it or an overlay replaces the permissions, and
// the read_only, idempotent and cacheable claims fall back to the safe
// treatment (a mutation with side effects, not retried, not cached)
// unless allow_claims lists them. An overlay's fields always stand.
func mcpSpec(upstream string, d mcpToolDesc, input map[string]any, overlay *toolsvcv1.Tool, tr trust) (*toolsvcv1.Tool, error) {
	a := d.Annotations
	readOnly := a.ReadOnlyHint != nil && *a.ReadOnlyHint
	orTrue := func(b *bool) bool { return b == nil || *b }
	spec := &toolsvcv1.Tool{
		Name: d.Name, Version: "1.0.0", Title: cmp.Or(d.Title, a.Title, d.Name), Description: d.Description,
		ResponseTime: "medium", Tags: []string{"mcp", upstream},
		ReadOnly: readOnly, OpenWorld: orTrue(a.OpenWorldHint),
	}
	if readOnly {
		spec.Category, spec.Idempotent = "query", true
		spec.Permissions = []string{upstream + ":read"}
	} else {
		spec.Category, spec.SideEffect = "mutation", true
		spec.Idempotent = a.IdempotentHint != nil && *a.IdempotentHint
		spec.Destructive = orTrue(a.DestructiveHint)
		spec.Permissions = []string{upstream + ":write"}
	}
	if ex, ok := input["examples"].([]any); ok {
		for i, e := range ex {
			if _, ok := e.(map[string]any); !ok {
				continue
			}
			b, err := json.Marshal(e)
			if err != nil {
				continue
			}
			spec.Examples = append(spec.Examples, &toolsvcv1.ExampleSpec{
				Description: "Example " + strconv.Itoa(i+1) + " of the tool's inputSchema.",
				ParamsJson:  string(b), ExpectedResultJson: "{}",
			})
		}
	}
	if raw, ok := d.Meta[MetaToolKey]; ok {
		meta := &toolsvcv1.Tool{}
		if err := protojson.Unmarshal(raw, meta); err != nil {
			return nil, fmt.Errorf("_meta[%q] is not a tool definition: %s", MetaToolKey, toolerr.DecodeReason(err.Error()))
		}
		replaceSet(spec, meta)
	}
	if len(overlay.GetPermissions()) == 0 {
		for _, p := range spec.GetPermissions() {
			if !strings.HasPrefix(p, upstream+":") && !slices.Contains(tr.permissions, p) {
				return nil, &permissionError{upstream: upstream, permission: p}
			}
		}
	}
	if spec.GetReadOnly() || spec.GetCategory() == "query" || !spec.GetSideEffect() {
		if !tr.allows(ClaimReadOnly) {
			spec.ReadOnly, spec.SideEffect, spec.Idempotent = false, true, false
			if spec.GetCategory() == "query" || spec.GetCategory() == "" {
				spec.Category = "mutation"
			}
		}
	}
	if spec.GetIdempotent() && !spec.GetReadOnly() && !tr.allows(ClaimIdempotent) {
		spec.Idempotent = false
	}
	if (spec.GetCacheable() || spec.GetCacheTtl() > 0) && !tr.allows(ClaimCacheable) {
		spec.Cacheable, spec.CacheTtl = false, 0
	}
	if spec.GetCategory() == "mutation" {
		spec.Cacheable, spec.CacheTtl = false, 0 // mutations are never cached
	}
	if overlay != nil {
		replaceSet(spec, overlay)
	}
	return spec, nil
}

// permissionError is a permission an upstream declared for its own tool
// outside its namespace, without the operator's leave.
type permissionError struct {
	upstream, permission string
}

func (e *permissionError) Error() string {
	return fmt.Sprintf("permission %q is outside the upstream's namespace %s:…; an upstream may only require its own permissions unless the upstreams file lists it under allow_permissions or an overlay sets the tool's permissions",
		e.permission, e.upstream)
}

// replaceSet sets in dst every field src sets.
func replaceSet(dst, src proto.Message) {
	d := dst.ProtoReflect()
	src.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		d.Set(fd, v)
		return true
	})
}

// mcpFile builds the descriptor of an MCP upstream's tools: one service
// whose methods take a google.protobuf.Struct and answer toolsvc's
// envelope with a Struct as data, so that the registry and the one chain
// treat them as any tool; their contracts are the JSON Schemas.
func mcpFile(upstream string, tools []*mcpTool) *descriptorpb.FileDescriptorProto {
	pkg := "mcp." + strings.ReplaceAll(upstream, "-", "_") + ".v1"
	fd := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("toolsvc/upstream/mcp/" + upstream + ".proto"),
		Package:    proto.String(pkg),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/struct.proto", "toolsvc/v1/hints.proto", "toolsvc/v1/result.proto", "toolsvc/v1/options.proto"},
	}
	svc := &descriptorpb.ServiceDescriptorProto{Name: proto.String("Tools")}
	for _, t := range tools {
		env := t.method + "ToolResult"
		fd.MessageType = append(fd.MessageType, envelope(env, "google.protobuf.Struct"))
		opts := &descriptorpb.MethodOptions{}
		proto.SetExtension(opts, toolsvcv1.E_Tool, t.spec)
		svc.Method = append(svc.Method, &descriptorpb.MethodDescriptorProto{
			Name: proto.String(t.method), InputType: proto.String(".google.protobuf.Struct"),
			OutputType: proto.String("." + pkg + "." + env), Options: opts,
		})
	}
	fd.Service = []*descriptorpb.ServiceDescriptorProto{svc}
	return fd
}

// schemaError turns a JSON Schema validation error into field violations:
// the JSON path of each value and the keyword it broke.
func schemaViolations(err error) []*toolsvcv1.FieldViolation {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []*toolsvcv1.FieldViolation{{Field: "(request)", Rule: "jsonschema", Message: firstLine(err.Error())}}
	}
	var out []*toolsvcv1.FieldViolation
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		kw := u.KeywordLocation
		if i := strings.LastIndexByte(kw, '/'); i >= 0 {
			kw = kw[i+1:]
		}
		if req, ok := u.Error.Kind.(*kind.Required); ok {
			// A missing property is the object's error in JSON Schema; an
			// agent acts on the property's name, as protovalidate gives it.
			for _, name := range req.Missing {
				out = append(out, &toolsvcv1.FieldViolation{Field: jsonPath(u.InstanceLocation + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(name)), Rule: "jsonschema.required", Message: "missing property " + strconv.Quote(name)})
			}
			continue
		}
		out = append(out, &toolsvcv1.FieldViolation{Field: jsonPath(u.InstanceLocation), Rule: "jsonschema." + kw, Message: u.Error.String()})
		if len(out) == 10 {
			break
		}
	}
	if len(out) == 0 {
		out = append(out, &toolsvcv1.FieldViolation{Field: "(request)", Rule: "jsonschema", Message: firstLine(ve.Error())})
	}
	return out
}

// jsonPath renders a JSON pointer as agents name fields: /files/2/path →
// files[2].path; the empty pointer is the request itself.
func jsonPath(ptr string) string {
	if ptr == "" || ptr == "/" {
		return "(request)"
	}
	var b strings.Builder
	for part := range strings.SplitSeq(strings.TrimPrefix(ptr, "/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(part); err == nil {
			b.WriteString("[" + part + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(part)
	}
	return b.String()
}

// checkInput is the JSONContract.Check of t: the decoded arguments
// against its inputSchema, INVALID_INPUT with every violation.
func (t *mcpTool) checkInput(m proto.Message) error {
	b, err := protojson.Marshal(m)
	if err != nil {
		return toolerr.Wrap(err, toolerr.InvalidInput, "the arguments do not encode as JSON")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return toolerr.Wrap(err, toolerr.InvalidInput, "the arguments are not JSON")
	}
	if err := t.inputCheck.Validate(v); err != nil {
		vs := schemaViolations(err)
		parts := make([]string, 0, len(vs))
		for _, x := range vs {
			parts = append(parts, x.GetField()+": "+x.GetMessage())
		}
		return &toolerr.Error{Code: toolerr.InvalidInput, Message: "invalid input: " + strings.Join(parts, "; "), Violations: vs}
	}
	return nil
}

// toStruct converts a JSON value read by jsonschema.UnmarshalJSON (numbers
// as json.Number) into a Struct.
func toStruct(v any) (*structpb.Struct, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("structuredContent is not a JSON object")
	}
	st := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(obj))}
	for k, x := range obj {
		val, err := toValue(x)
		if err != nil {
			return nil, err
		}
		st.Fields[k] = val
	}
	return st, nil
}

func toValue(v any) (*structpb.Value, error) {
	switch x := v.(type) {
	case nil:
		return structpb.NewNullValue(), nil
	case bool:
		return structpb.NewBoolValue(x), nil
	case string:
		return structpb.NewStringValue(x), nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range", x)
		}
		return structpb.NewNumberValue(f), nil
	case map[string]any:
		st, err := toStruct(x)
		if err != nil {
			return nil, err
		}
		return structpb.NewStructValue(st), nil
	case []any:
		list := &structpb.ListValue{Values: make([]*structpb.Value, 0, len(x))}
		for _, e := range x {
			val, err := toValue(e)
			if err != nil {
				return nil, err
			}
			list.Values = append(list.Values, val)
		}
		return structpb.NewListValue(list), nil
	}
	return nil, fmt.Errorf("unexpected JSON value %T", v)
}
