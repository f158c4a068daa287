package client

import (
	"context"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// toolInfo is what the client needs of a tool's contract: whether a call
// may change something (then it carries an idempotency key and is retried
// only with one) and its response-time class (its default deadline).
type toolInfo struct {
	name string
	// mutates: the contract declares side_effect or destructive, as the
	// server's idempotency step reads it.
	mutates bool
	// class is fast, medium or slow.
	class string
}

// unknownTool is the conservative guess for a tool whose contract the
// client cannot read: it may change something, in the medium class.
var unknownTool = toolInfo{mutates: true, class: "medium"}

// infoOfSpec reads the (toolsvc.v1.tool) option.
func infoOfSpec(spec *toolsvcv1.Tool) toolInfo {
	return toolInfo{name: spec.GetName(), mutates: spec.GetSideEffect() || spec.GetDestructive(), class: spec.GetResponseTime()}
}

// infoOfDefinition reads a ToolDefinition (ToolService.GetTool).
func infoOfDefinition(d *toolsvcv1.ToolDefinition) toolInfo {
	return toolInfo{name: d.GetName(), mutates: d.GetSideEffect() || d.GetAnnotations().GetDestructiveHint(), class: d.GetResponseTime()}
}

// methods caches the tool of each gRPC method ("/pkg.Service/Method"),
// read from the descriptors linked into the process (the generated code
// registers them): a method without the option is not a tool (ok false).
var methods sync.Map // string → methodTool

type methodTool struct {
	info toolInfo
	ok   bool
}

// toolOfMethod returns the tool a gRPC method is, from its descriptor's
// (toolsvc.v1.tool) option.
func toolOfMethod(fullMethod string) (toolInfo, bool) {
	if v, ok := methods.Load(fullMethod); ok {
		m := v.(methodTool)
		return m.info, m.ok
	}
	var m methodTool
	svc, method, found := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if found {
		if d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc)); err == nil {
			if sd, ok := d.(protoreflect.ServiceDescriptor); ok {
				if md := sd.Methods().ByName(protoreflect.Name(method)); md != nil {
					if spec := specOf(md); spec != nil {
						m = methodTool{info: infoOfSpec(spec), ok: true}
					}
				}
			}
		}
	}
	methods.Store(fullMethod, m)
	return m.info, m.ok
}

// specOf is the method's (toolsvc.v1.tool) option, or nil.
func specOf(md protoreflect.MethodDescriptor) *toolsvcv1.Tool {
	opts := md.Options()
	if opts == nil || !proto.HasExtension(opts, toolsvcv1.E_Tool) {
		return nil
	}
	spec, _ := proto.GetExtension(opts, toolsvcv1.E_Tool).(*toolsvcv1.Tool)
	return spec
}

var (
	linkedOnce sync.Once
	linked     map[string]toolInfo
)

// linkedTool returns the tool named name among those whose contracts are
// linked into the process (the built-in tools, and any other service whose
// generated code the program imports).
func linkedTool(name string) (toolInfo, bool) {
	linkedOnce.Do(func() {
		linked = map[string]toolInfo{}
		protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
			for i := range fd.Services().Len() {
				ms := fd.Services().Get(i).Methods()
				for j := range ms.Len() {
					if spec := specOf(ms.Get(j)); spec != nil {
						linked[spec.GetName()] = infoOfSpec(spec)
					}
				}
			}
			return true
		})
	})
	t, ok := linked[name]
	return t, ok
}

// definitionTTL is how long the client trusts a tool definition it asked
// the server for (an upstream tool's): the operator may change it.
const definitionTTL = 5 * time.Minute

// definitions caches the contracts of tools the process does not link,
// read with ToolService.GetTool.
type definitions struct {
	mu    sync.Mutex
	tools map[string]definition
}

type definition struct {
	info    toolInfo
	fetched time.Time
}

// toolNamed returns the contract of the tool name: from the linked
// descriptors, else from the server (cached for definitionTTL), else the
// conservative guess. get asks the server.
func (d *definitions) toolNamed(ctx context.Context, name string, get func(context.Context, string) (*toolsvcv1.ToolDefinition, error)) toolInfo {
	if t, ok := linkedTool(name); ok {
		return t
	}
	d.mu.Lock()
	def, ok := d.tools[name]
	d.mu.Unlock()
	if ok && time.Since(def.fetched) < definitionTTL {
		return def.info
	}
	td, err := get(ctx, name)
	if err != nil {
		// Unknown or unreachable: the call itself will say which; until
		// then, treat it as a write.
		return unknownTool
	}
	info := infoOfDefinition(td)
	d.mu.Lock()
	if d.tools == nil {
		d.tools = map[string]definition{}
	}
	d.tools[name] = definition{info: info, fetched: time.Now()}
	d.mu.Unlock()
	return info
}
