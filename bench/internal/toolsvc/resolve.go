package toolsvc

import (
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	// The tool services register their descriptors with the global registry.
	_ "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	_ "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	_ "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	_ "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// ErrUnknownTool is returned by Resolve for a name no contract declares.
var ErrUnknownTool = errors.New("toolsvc: unknown tool")

// Tool is how a tool is reached on each transport.
type Tool struct {
	Name       string
	FullMethod string
	Input      protoreflect.MessageType
	Output     protoreflect.MessageType
	// RESTMethod and RESTPath are the typed REST route; RESTPath is empty
	// when the route has path variables, and callers use the generic
	// seed route instead.
	RESTMethod string
	RESTPath   string
}

// Resolve finds the tool named name among the compiled-in contracts.
func Resolve(name string) (Tool, error) {
	var found Tool
	var err error
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		svcs := fd.Services()
		for i := range svcs.Len() {
			ms := svcs.Get(i).Methods()
			for j := range ms.Len() {
				md := ms.Get(j)
				opts, ok := md.Options().(*descriptorpb.MethodOptions)
				if !ok || opts == nil {
					continue
				}
				spec, _ := proto.GetExtension(opts, toolsvcv1.E_Tool).(*toolsvcv1.Tool)
				if spec.GetName() != name {
					continue
				}
				found, err = describe(name, md, opts)
				return false
			}
		}
		return true
	})
	if err != nil {
		return Tool{}, err
	}
	if found.Name == "" {
		return Tool{}, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	return found, nil
}

func describe(name string, md protoreflect.MethodDescriptor, opts *descriptorpb.MethodOptions) (Tool, error) {
	in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
	if err != nil {
		return Tool{}, fmt.Errorf("toolsvc: %s input: %w", name, err)
	}
	out, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		return Tool{}, fmt.Errorf("toolsvc: %s output: %w", name, err)
	}
	t := Tool{Name: name, FullMethod: fmt.Sprintf("/%s/%s", md.Parent().FullName(), md.Name()), Input: in, Output: out}
	rule, _ := proto.GetExtension(opts, annotations.E_Http).(*annotations.HttpRule)
	switch {
	case rule.GetGet() != "":
		t.RESTMethod, t.RESTPath = http.MethodGet, rule.GetGet()
	case rule.GetPost() != "" && rule.GetBody() == "*":
		t.RESTMethod, t.RESTPath = http.MethodPost, rule.GetPost()
	}
	for _, c := range t.RESTPath {
		if c == '{' {
			t.RESTMethod, t.RESTPath = "", ""
			break
		}
	}
	return t, nil
}
