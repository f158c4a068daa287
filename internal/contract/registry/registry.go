package registry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"buf.build/go/protovalidate"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolsvc/toolsvc/gen/descriptor"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/prompt"
	"github.com/toolsvc/toolsvc/internal/contract/resource"
	"github.com/toolsvc/toolsvc/internal/contract/schema"
)

// Service is a gRPC service implementation whose RPCs are tools.
//
// An in-tree service also brings its REST routes: REST registers the
// service's typed grpc-gateway handlers on mux, calling through conn (the
// in-process channel, so the chain still decides). A service without REST
// is reachable over REST only by the generic /v1/tools/{name}:call route.
// Adding a service is one Service value: gRPC, MCP and REST follow from it.
type Service struct {
	Desc *grpc.ServiceDesc
	Impl any
	REST func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error
	// Files, when set, holds the service's descriptors: contracts read at
	// run time (an upstream's reflection or descriptor set), whose
	// messages are dynamic (dynamicpb). Default: the registry's resolver.
	Files Resolver
	// Source names where the service's tools come from: empty for the
	// in-tree suite, "upstream NAME" for a forwarded one. A tool of a
	// sourced service that breaks the checklist, or claims a name and
	// version another source serves, is refused (Registry.Refused) and not
	// served; an in-tree tool that does stops the registry.
	Source string
	// Contracts, when set, holds the JSON Schema contracts of methods
	// whose tools are defined by schemas rather than by messages (an
	// upstream MCP server's tools), by method name: their request is a
	// google.protobuf.Struct and their data a Struct too.
	Contracts map[string]JSONContract
	// DataVersion, when set, names the version of the data the service's
	// tools answer a tenant from, and pins that data in the returned
	// context for the call: the result cache keys results by it, so a
	// result computed from one version is never served from another (the
	// knowledge set, which each replica loads). Nil for data read live from
	// the store.
	DataVersion DataVersionFunc
	// Resources, when set, serves the resources of the service's domain
	// (knowledge items at knowledge://{id}) to the transports that have
	// resources (MCP), which ask the providers of the registered services
	// by URI scheme. Nil: the service has none.
	Resources resource.Provider
	// Prompts, when set, serves prompts (MCP's prompts/list and
	// prompts/get) to the transports that have them, which ask the
	// providers of the registered services by name prefix. Nil: none.
	Prompts prompt.Provider
	// Verbs are words, beyond Verbs, that the names of this service's tools
	// may start with, each with its meaning (docs/CONTRACTS.md, "Tool
	// names"): an upstream's operator extends the list for that upstream
	// only (docs/ADDING-A-TOOL.md). Nil: the listed verbs only.
	Verbs map[string]string
}

// JSONContract is the contract of a tool defined by JSON Schemas (an
// upstream MCP server's tool). The registry serves Input and Output as the
// tool's schemas instead of deriving them from messages, and checks every
// decoded request, examples included, with Check.
type JSONContract struct {
	// Input is the schema of the arguments.
	Input schema.Schema
	// Output is the schema of the result's data.
	Output schema.Schema
	// Check validates a decoded request against Input; its error is an
	// INVALID_INPUT *toolerr.Error naming the field and the rule.
	Check func(proto.Message) error
}

// DataVersionFunc returns ctx with the data a call of tenant will answer
// from pinned, and that data's version.
type DataVersionFunc func(ctx context.Context, tenant string) (context.Context, string)

// Forwarded reports whether the service's tools run elsewhere (an
// upstream): only ToolService.CallTool reaches them, never a typed RPC of
// toolsvc's own gRPC server.
func (s Service) Forwarded() bool { return s.Source != "" }

// Example is a decoded, executable example of a tool.
type Example struct {
	Description string
	Params      proto.Message  // the decoded request
	ParamsJSON  map[string]any // the request as written
	Expected    map[string]any // expected data, or the expected ToolError
	ErrorCode   string         // expected error code; empty for a success
}

// Tool is one registered tool version.
type Tool struct {
	Name    string
	Version string
	// Spec is the contract author's option, as written.
	Spec *toolsvcv1.Tool
	// Def is what the service reports about the tool.
	Def *toolsvcv1.ToolDefinition
	// FullMethod is the gRPC method, e.g. /toolsvc.memory.v1.MemoryService/AddMemory.
	FullMethod string
	Method     protoreflect.MethodDescriptor
	// Input and Output create request and response messages.
	Input, Output protoreflect.MessageType
	// InputSchema and OutputSchema are the derived JSON Schemas.
	InputSchema, OutputSchema schema.Schema
	// Domain is the tool's domain, from its proto package (memory, knowledge, ...).
	Domain string
	// Invalidates lists the domains a successful call invalidates in the cache.
	Invalidates  []string
	TenantScoped bool
	Examples     []Example
	// RemovalDate is when a deprecated tool stops answering; zero if never.
	RemovalDate time.Time
	// Source is the service's Source: empty for an in-tree tool.
	Source string
	// CheckInput, when set, validates a decoded request beyond its
	// protovalidate rules (a JSON Schema contract's Check): the chain's
	// validation step calls it.
	CheckInput func(proto.Message) error
	// DataVersion is the service's DataVersion; nil for most tools.
	DataVersion DataVersionFunc

	handler grpc.MethodHandler
	impl    any
	semver  [3]int
}

// Call runs the tool's implementation directly with req, without any
// interceptor: the interceptor chain calls it after its checks.
func (t *Tool) Call(ctx context.Context, req proto.Message) (proto.Message, error) {
	resp, err := t.handler(t.impl, ctx, func(v any) error {
		proto.Merge(v.(proto.Message), req)
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	return resp.(proto.Message), nil
}

// Deprecated reports whether the tool carries a deprecation notice.
func (t *Tool) Deprecated() bool { return t.Spec.GetDeprecated() != nil }

// Removed reports whether a deprecated tool is past its removal date at now.
func (t *Tool) Removed(now time.Time) bool {
	return !t.RemovalDate.IsZero() && !now.Before(t.RemovalDate)
}

// Registry holds every tool. It is immutable after New and safe for
// concurrent use.
type Registry struct {
	byMethod map[string]*Tool
	byName   map[string][]*Tool // ascending semver
	all      []*Tool            // by name, then ascending semver
	services []Service          // as given to New
	refused  []Refusal          // tools of sourced services not served
}

// Refusal is a tool of a sourced service (an upstream) that is not served,
// and why.
type Refusal struct {
	Source string
	Violation
}

// Option configures New.
type Option func(*config)

type config struct {
	files Resolver
	types *protoregistry.Types
}

// Resolver finds descriptors by full name.
type Resolver interface {
	FindDescriptorByName(protoreflect.FullName) (protoreflect.Descriptor, error)
}

// WithResolver resolves service descriptors and message types from files
// and types instead of the global registries (tests load contracts that are
// compiled at run time). Default: the linked contracts with their comments
// (gen/descriptor, then protoregistry.GlobalFiles) and GlobalTypes.
func WithResolver(files Resolver, types *protoregistry.Types) Option {
	return func(c *config) { c.files, c.types = files, types }
}

// WithSourceInfo resolves service descriptors from a FileDescriptorSet that
// keeps source info (gen/descriptor), falling back to the linked ones, so
// that derived schemas carry every field's comment as its description.
func WithSourceInfo(set []byte) Option {
	return func(c *config) {
		files, err := SourceFiles(set)
		if err != nil {
			return
		}
		c.files = fallback{files, protoregistry.GlobalFiles}
	}
}

// SourceFiles parses a binary FileDescriptorSet.
func SourceFiles(set []byte) (*protoregistry.Files, error) {
	fds := &descriptorpb.FileDescriptorSet{}
	if err := proto.Unmarshal(set, fds); err != nil {
		return nil, fmt.Errorf("registry: descriptor set: %w", err)
	}
	return protodesc.NewFiles(fds)
}

// defaultFiles resolves the linked contracts through gen/descriptor's
// copy, which keeps their comments: every in-tree parameter's description
// comes from its field's comment (docs/CONTRACTS.md), whoever builds the
// registry.
var defaultFiles = sync.OnceValue(func() Resolver {
	files, err := SourceFiles(descriptor.Set)
	if err != nil {
		return protoregistry.GlobalFiles
	}
	return fallback{files, protoregistry.GlobalFiles}
})

type fallback []Resolver

func (f fallback) FindDescriptorByName(n protoreflect.FullName) (protoreflect.Descriptor, error) {
	var err error
	for _, r := range f {
		var d protoreflect.Descriptor
		if d, err = r.FindDescriptorByName(n); err == nil {
			return d, nil
		}
	}
	return nil, err
}

// New builds the registry from services, validating every tool against the
// checklist. It returns a *CheckError listing every violation when any
// tool breaks a rule.
func New(services []Service, opts ...Option) (*Registry, error) {
	cfg := config{types: protoregistry.GlobalTypes}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.files == nil {
		cfg.files = defaultFiles()
	}
	validator, err := protovalidate.New()
	if err != nil {
		return nil, fmt.Errorf("registry: build validator: %w", err)
	}
	r := &Registry{byMethod: map[string]*Tool{}, byName: map[string][]*Tool{}, services: slices.Clone(services)}
	var violations []Violation
	// In-tree services first, so that a name an upstream also claims is
	// refused on the upstream's side.
	ordered := slices.Clone(services)
	slices.SortStableFunc(ordered, func(a, b Service) int { return cmp.Compare(a.Source, b.Source) })
	for _, svc := range ordered {
		tools, vs := load(svc, validator, &cfg)
		if svc.Source != "" {
			for _, v := range vs {
				r.refused = append(r.refused, Refusal{Source: svc.Source, Violation: v})
			}
		} else {
			violations = append(violations, vs...)
		}
		for _, t := range tools {
			t.Source = svc.Source
			t.DataVersion = svc.DataVersion
			if t.Source != "" {
				if v, clash := r.conflict(t); clash {
					r.refused = append(r.refused, Refusal{Source: t.Source, Violation: v})
					continue
				}
			}
			r.byMethod[t.FullMethod] = t
			r.byName[t.Name] = append(r.byName[t.Name], t)
			r.all = append(r.all, t)
		}
	}
	for _, v := range r.crossCheck() {
		if t, ok := r.byMethod[v.Method]; ok && t.Source != "" {
			r.refused = append(r.refused, Refusal{Source: t.Source, Violation: v})
			r.remove(t)
			continue
		}
		violations = append(violations, v)
	}
	if len(violations) > 0 {
		return nil, &CheckError{Violations: violations}
	}
	for _, versions := range r.byName {
		slices.SortFunc(versions, func(a, b *Tool) int { return compareSemver(a.semver, b.semver) })
	}
	slices.SortFunc(r.all, func(a, b *Tool) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), compareSemver(a.semver, b.semver))
	})
	slices.SortStableFunc(r.refused, func(a, b Refusal) int {
		return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.Tool, b.Tool))
	})
	return r, nil
}

// Services returns the services the registry was built from, in the order
// given to New.
func (r *Registry) Services() []Service { return slices.Clone(r.services) }

// Refused returns the tools of sourced services that are not served, by
// source then tool, with the rule each broke.
func (r *Registry) Refused() []Refusal { return slices.Clone(r.refused) }

// conflict reports whether t, a sourced tool, claims a name and version
// that a tool already registered serves, or a method another tool has.
// Versions of one tool may come from different sources (docs/CONTRACTS.md: the
// highest wins, older ones stay callable by version).
func (r *Registry) conflict(t *Tool) (Violation, bool) {
	if prev, ok := r.byMethod[t.FullMethod]; ok {
		return Violation{Tool: t.Name, Method: t.FullMethod, Rule: RuleNameUnique,
			Message: fmt.Sprintf("method is also served by %s", sourceName(prev))}, true
	}
	for _, prev := range r.byName[t.Name] {
		if prev.Version == t.Version {
			return Violation{Tool: t.Name, Method: t.FullMethod, Rule: RuleNameUnique,
				Message: fmt.Sprintf("conflict: %s %s is also served by %s (%s); a name is never silently overridden", t.Name, t.Version, sourceName(prev), prev.FullMethod)}, true
		}
	}
	return Violation{}, false
}

// remove takes a refused tool out of the registry.
func (r *Registry) remove(t *Tool) {
	delete(r.byMethod, t.FullMethod)
	r.byName[t.Name] = slices.DeleteFunc(r.byName[t.Name], func(x *Tool) bool { return x == t })
	if len(r.byName[t.Name]) == 0 {
		delete(r.byName, t.Name)
	}
	r.all = slices.DeleteFunc(r.all, func(x *Tool) bool { return x == t })
}

func sourceName(t *Tool) string {
	if t.Source == "" {
		return "toolsvc (in-tree)"
	}
	return t.Source
}

// crossCheck applies the rules that span tools: unique name and version,
// and replacements of deprecated tools that exist.
func (r *Registry) crossCheck() []Violation {
	var vs []Violation
	for name, versions := range r.byName {
		seen := map[string]string{}
		for _, t := range versions {
			if prev, dup := seen[t.Version]; dup {
				vs = append(vs, Violation{Tool: name, Method: t.FullMethod, Rule: RuleNameUnique,
					Message: fmt.Sprintf("version %s is also declared by %s", t.Version, prev)})
			}
			seen[t.Version] = t.FullMethod
			if d := t.Spec.GetDeprecated(); d != nil {
				if _, ok := r.byName[d.GetReplacement()]; !ok {
					vs = append(vs, Violation{Tool: name, Method: t.FullMethod, Rule: RuleDeprecationReplacement,
						Message: fmt.Sprintf("replacement %q is not a registered tool", d.GetReplacement())})
				}
			}
		}
	}
	slices.SortFunc(vs, func(a, b Violation) int {
		return cmp.Or(strings.Compare(a.Tool, b.Tool), strings.Compare(a.Rule, b.Rule))
	})
	return vs
}

// load reads the tools of one service.
func load(svc Service, validator protovalidate.Validator, cfg *config) ([]*Tool, []Violation) {
	files := cfg.files
	if svc.Files != nil {
		files = svc.Files
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(svc.Desc.ServiceName))
	if err != nil {
		return nil, []Violation{{Method: svc.Desc.ServiceName, Rule: RuleDescriptor, Message: "service descriptor not found: " + err.Error()}}
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, []Violation{{Method: svc.Desc.ServiceName, Rule: RuleDescriptor, Message: "not a service"}}
	}
	var (
		tools []*Tool
		vs    []Violation
	)
	for _, m := range svc.Desc.Methods {
		full := "/" + svc.Desc.ServiceName + "/" + m.MethodName
		md := sd.Methods().ByName(protoreflect.Name(m.MethodName))
		if md == nil {
			vs = append(vs, Violation{Method: full, Rule: RuleDescriptor, Message: "method descriptor not found"})
			continue
		}
		spec, ok := extension(md.Options(), toolsvcv1.E_Tool).(*toolsvcv1.Tool)
		if !ok || spec == nil || spec.GetName() == "" {
			vs = append(vs, Violation{Method: full, Rule: RuleOptionPresent,
				Message: "every RPC of a tool service must declare (toolsvc.v1.tool); nothing else is callable"})
			continue
		}
		var jc *JSONContract
		if c, ok := svc.Contracts[m.MethodName]; ok {
			jc = &c
		}
		t, tvs := build(full, md, spec, m.Handler, svc.Impl, validator, cfg, svc.Files != nil, jc, svc.Verbs)
		vs = append(vs, tvs...)
		if t != nil {
			tools = append(tools, t)
		}
	}
	if len(svc.Desc.Streams) > 0 {
		vs = append(vs, Violation{Method: svc.Desc.ServiceName, Rule: RuleUnary, Message: "tools are unary RPCs; streaming methods are not allowed"})
	}
	return tools, vs
}

// build checks one tool and assembles it.
func build(full string, md protoreflect.MethodDescriptor, spec *toolsvcv1.Tool, h grpc.MethodHandler, impl any, validator protovalidate.Validator, cfg *config, dynamic bool, jc *JSONContract, verbs map[string]string) (*Tool, []Violation) {
	vs := Check(md, spec, validator)
	if verbs[verbOf(spec.GetName())] != "" {
		// A verb the service's operator added, with its meaning.
		vs = slices.DeleteFunc(vs, func(v Violation) bool { return v.Rule == RuleNameVerb })
	}
	if jc != nil {
		// A schema-defined tool's request is a Struct, not <Method>Request.
		vs = slices.DeleteFunc(vs, func(v Violation) bool { return v.Rule == RuleRequestName })
	}
	var (
		in, out       protoreflect.MessageType
		errIn, errOut error
	)
	if dynamic {
		in, out = dynamicpb.NewMessageType(md.Input()), dynamicpb.NewMessageType(md.Output())
		// A linked message (google.protobuf.Struct) keeps its Go type.
		if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName()); err == nil && mt.Descriptor() == md.Input() {
			in = mt
		}
	} else {
		in, errIn = cfg.types.FindMessageByName(md.Input().FullName())
		out, errOut = cfg.types.FindMessageByName(md.Output().FullName())
	}
	if errIn != nil || errOut != nil {
		vs = append(vs, Violation{Tool: spec.GetName(), Method: full, Rule: RuleDescriptor, Message: "request or response type is not linked into the binary"})
		return nil, vs
	}
	opts := schema.Options{FieldDefault: fieldDefault}
	inSchema, err := schema.Derive(md.Input(), opts)
	if err != nil {
		vs = append(vs, Violation{Tool: spec.GetName(), Method: full, Rule: RuleSchema, Message: err.Error()})
	}
	outSchema, err := schema.Derive(md.Output(), opts)
	if err != nil {
		vs = append(vs, Violation{Tool: spec.GetName(), Method: full, Rule: RuleSchema, Message: err.Error()})
	}
	var check func(proto.Message) error
	if jc != nil {
		inSchema, check = jc.Input, jc.Check
		if props, ok := outSchema["properties"].(map[string]any); ok {
			props["data"] = jc.Output
		}
	} else if inSchema != nil {
		applyTypedIDs(inSchema, md.Input())
	}
	if missing := UndescribedParameters(inSchema); len(missing) > 0 {
		vs = append(vs, Violation{Rule: RuleParamsDescribed, Message: fmt.Sprintf(
			"parameters without a description: %s (a proto field's leading comment, or a JSON Schema property's description)", strings.Join(missing, ", "))})
	}
	examples, evs := decodeExamples(spec, in, validator, check)
	for i := range evs {
		evs[i].Tool, evs[i].Method = spec.GetName(), full
	}
	vs = append(vs, evs...)
	var removal time.Time
	if d := spec.GetDeprecated(); d != nil {
		removal, _ = time.Parse(time.DateOnly, d.GetRemovalDate())
	}
	for i := range vs {
		vs[i].Tool, vs[i].Method = spec.GetName(), full
	}
	if len(vs) > 0 {
		return nil, vs
	}
	t := &Tool{
		Name: spec.GetName(), Version: spec.GetVersion(), Spec: spec, FullMethod: full, Method: md,
		Input: in, Output: out, InputSchema: inSchema, OutputSchema: outSchema,
		Domain: domainOf(md), TenantScoped: spec.TenantScoped == nil || spec.GetTenantScoped(),
		Examples: examples, RemovalDate: removal, handler: h, impl: impl, CheckInput: check,
	}
	t.semver, _ = parseSemver(spec.GetVersion())
	t.Invalidates = spec.GetInvalidates()
	if len(t.Invalidates) == 0 && spec.GetSideEffect() {
		t.Invalidates = []string{t.Domain}
	}
	t.Def = definition(t)
	if !dynamic {
		// Described, a tool keeps the linked descriptor of its method
		// rather than the copy with comments it was described from
		// (WithSourceInfo): that copy, every contract file parsed again
		// with its source info (a few MiB), is garbage once the registry is
		// built instead of staying live as long as the registry does.
		if d, err := protoregistry.GlobalFiles.FindDescriptorByName(md.FullName()); err == nil {
			if linked, ok := d.(protoreflect.MethodDescriptor); ok {
				t.Method = linked
			}
		}
	}
	return t, nil
}

// fieldDefault reads (toolsvc.v1.field_default) as JSON.
func fieldDefault(fd protoreflect.FieldDescriptor) (any, bool) {
	raw, _ := extension(fd.Options(), toolsvcv1.E_FieldDefault).(string)
	if raw == "" {
		return nil, false
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, false
	}
	return v, true
}

// domainOf is the last non-version component of the service's package:
// toolsvc.memory.v1 -> memory.
func domainOf(md protoreflect.MethodDescriptor) string {
	parts := strings.Split(string(md.Parent().ParentFile().Package()), ".")
	for i := len(parts) - 1; i >= 0; i-- {
		if p := parts[i]; !isVersion(p) {
			return p
		}
	}
	return string(md.Parent().Name())
}

func isVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' {
		return false
	}
	return s[1] >= '0' && s[1] <= '9'
}

// definition renders the reported ToolDefinition.
func definition(t *Tool) *toolsvcv1.ToolDefinition {
	s := t.Spec
	def := &toolsvcv1.ToolDefinition{
		Name: s.GetName(), Version: s.GetVersion(), Title: s.GetTitle(), Description: s.GetDescription(),
		Permissions: nonNil(s.GetPermissions()), Category: s.GetCategory(), ResponseTime: s.GetResponseTime(),
		Cacheable: s.GetCacheable(), CacheTtl: s.GetCacheTtl(), Idempotent: s.GetIdempotent(), Tags: nonNil(s.GetTags()),
		RateLimit: s.GetRateLimit(), Deprecated: s.GetDeprecated(), Deterministic: s.GetDeterministic(),
		SideEffect: s.GetSideEffect(), TenantScoped: t.TenantScoped, Cost: s.GetCost(),
		Annotations: &toolsvcv1.ToolAnnotations{
			Title: s.GetTitle(), ReadOnlyHint: s.GetReadOnly(), DestructiveHint: s.GetDestructive(),
			IdempotentHint: s.GetIdempotent(), OpenWorldHint: s.GetOpenWorld(),
		},
		GrpcMethod: t.FullMethod, Domain: t.Domain, Http: httpRoute(t.Method),
	}
	def.InputSchema = toStruct(t.InputSchema)
	def.OutputSchema = toStruct(t.OutputSchema)
	for _, ex := range t.Examples {
		pe := &toolsvcv1.ToolExample{Description: ex.Description, ExpectedErrorCode: ex.ErrorCode}
		pe.Params = toStruct(ex.ParamsJSON)
		pe.ExpectedResult = toStruct(ex.Expected)
		def.Examples = append(def.Examples, pe)
	}
	return def
}

// toStruct converts a JSON-shaped Go value (a derived schema or an
// example) to a Struct. The values schemas and examples hold are built
// directly (structValue); a value of any other type makes the whole
// conversion go through its JSON encoding, as it always did before (the
// direct way is a fifth of the registry's build time less at start-up,
// docs/BENCHMARKS.md "Where start-up time goes"; TestToStructMatchesJSON
// holds the two equal on every built-in tool).
func toStruct(v map[string]any) *structpb.Struct {
	if v == nil {
		return nil
	}
	if st, ok := structOf(v); ok {
		return st
	}
	return toStructJSON(v)
}

// toStructJSON converts v through its JSON encoding.
func toStructJSON(v map[string]any) *structpb.Struct {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	st := &structpb.Struct{}
	if err := protojson.Unmarshal(b, st); err != nil {
		return nil
	}
	return st
}

func structOf(m map[string]any) (*structpb.Struct, bool) {
	st := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(m))}
	for k, v := range m {
		sv, ok := structValue(v)
		if !ok {
			return nil, false
		}
		st.Fields[k] = sv
	}
	return st, true
}

// structValue is v as a Struct value, as its JSON encoding would read
// back; false for a type it does not know (or a number JSON cannot hold).
func structValue(v any) (*structpb.Value, bool) {
	switch x := v.(type) {
	case nil:
		return structpb.NewNullValue(), true
	case bool:
		return structpb.NewBoolValue(x), true
	case string:
		if !utf8.ValidString(x) {
			return nil, false // JSON would replace the bad bytes
		}
		return structpb.NewStringValue(x), true
	case float64:
		return numberValue(x)
	case int:
		return numberValue(float64(x))
	case int64:
		return numberValue(float64(x))
	case uint64:
		return numberValue(float64(x))
	case map[string]any:
		st, ok := structOf(x)
		if !ok {
			return nil, false
		}
		return structpb.NewStructValue(st), true
	case []any:
		return listValue(x)
	case []string:
		return listValue(x)
	case []map[string]any:
		return listValue(x)
	}
	return nil, false
}

// listValue is a list of structValues.
func listValue[E any](x []E) (*structpb.Value, bool) {
	l := &structpb.ListValue{Values: make([]*structpb.Value, len(x))}
	for i, e := range x {
		ev, ok := structValue(e)
		if !ok {
			return nil, false
		}
		l.Values[i] = ev
	}
	return structpb.NewListValue(l), true
}

// numberValue is f as a number value; false for what JSON cannot hold.
func numberValue(f float64) (*structpb.Value, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	return structpb.NewNumberValue(f), true
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// CheckError lists every violation that stopped the registry from building.
type CheckError struct{ Violations []Violation }

// Error implements error.
func (e *CheckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "registry: %d tool contract violation(s):", len(e.Violations))
	for _, v := range e.Violations {
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	return b.String()
}

// AsCheckError returns the *CheckError in err's chain.
func AsCheckError(err error) (*CheckError, bool) {
	var ce *CheckError
	ok := errors.As(err, &ce)
	return ce, ok
}

// extension reads an option extension. Descriptors compiled at run time
// (protocompile, in tests) hold custom options as dynamic messages or
// unknown fields, so the options are re-parsed with the linked Go types;
// this runs once per method at start-up.
func extension(opts proto.Message, xt protoreflect.ExtensionType) any {
	if opts == nil || !opts.ProtoReflect().IsValid() {
		return xt.InterfaceOf(xt.Zero())
	}
	b, err := proto.Marshal(opts)
	if err != nil {
		return xt.InterfaceOf(xt.Zero())
	}
	fresh := opts.ProtoReflect().New().Interface()
	if err := (proto.UnmarshalOptions{Resolver: protoregistry.GlobalTypes}).Unmarshal(b, fresh); err != nil {
		return xt.InterfaceOf(xt.Zero())
	}
	return proto.GetExtension(fresh, xt)
}
