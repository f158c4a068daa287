// Package testproto compiles test-only contracts at test time
// (protocompile), so tests can register tools with deliberately broken or
// deprecated definitions without generated code. Imports resolve from the
// directory given and from the descriptors linked into the test binary
// (toolsvc/v1, buf/validate, google/protobuf).
package testproto

import (
	"context"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	// Linked so the test contracts can import them.
	_ "buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	_ "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// Compiled is one compiled file with registries for its descriptors and
// dynamic message types.
type Compiled struct {
	Files *protoregistry.Files
	Types *protoregistry.Types
	File  protoreflect.FileDescriptor
}

// Compile compiles dir/name.
func Compile(tb testing.TB, dir, name string) Compiled {
	tb.Helper()
	linked := protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		fd, err := protoregistry.GlobalFiles.FindFileByPath(path)
		if err != nil {
			return protocompile.SearchResult{}, err
		}
		return protocompile.SearchResult{Desc: fd}, nil
	})
	c := protocompile.Compiler{
		Resolver:       protocompile.CompositeResolver{&protocompile.SourceResolver{ImportPaths: []string{dir}}, linked},
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	fds, err := c.Compile(context.Background(), name)
	if err != nil {
		tb.Fatalf("testproto: compile %s: %v", name, err)
	}
	files := new(protoregistry.Files)
	built, err := protodesc.NewFile(protodesc.ToFileDescriptorProto(fds[0]), chain{files})
	if err != nil {
		tb.Fatalf("testproto: link %s: %v", name, err)
	}
	if err := files.RegisterFile(built); err != nil {
		tb.Fatal(err)
	}
	types := new(protoregistry.Types)
	msgs := built.Messages()
	for i := 0; i < msgs.Len(); i++ {
		if err := types.RegisterMessage(dynamicpb.NewMessageType(msgs.Get(i))); err != nil {
			tb.Fatal(err)
		}
	}
	return Compiled{Files: files, Types: types, File: built}
}

// chain finds local files first, then the linked ones.
type chain struct{ local *protoregistry.Files }

func (r chain) FindFileByPath(p string) (protoreflect.FileDescriptor, error) {
	if fd, err := r.local.FindFileByPath(p); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(p)
}

func (r chain) FindDescriptorByName(n protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := r.local.FindDescriptorByName(n); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(n)
}

// Handler answers one method of a compiled service with dynamic messages.
type Handler func(ctx context.Context, req *dynamicpb.Message, resp *dynamicpb.Message) error

// Service describes a compiled service as a grpc.ServiceDesc whose
// methods run handlers[method] (or fail if none), through the interceptor
// chain exactly like generated code.
func (c Compiled) Service(name string, handlers map[string]Handler) *grpc.ServiceDesc {
	sd := c.File.Services().ByName(protoreflect.Name(name))
	desc := &grpc.ServiceDesc{ServiceName: string(sd.FullName()), HandlerType: (*any)(nil)}
	for i := 0; i < sd.Methods().Len(); i++ {
		md := sd.Methods().Get(i)
		full := "/" + string(sd.FullName()) + "/" + string(md.Name())
		h := handlers[string(md.Name())]
		desc.Methods = append(desc.Methods, grpc.MethodDesc{
			MethodName: string(md.Name()),
			Handler: func(_ any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
				req := dynamicpb.NewMessage(md.Input())
				if err := dec(req); err != nil {
					return nil, err
				}
				run := func(ctx context.Context, r any) (any, error) {
					resp := dynamicpb.NewMessage(md.Output())
					if h == nil {
						return resp, nil
					}
					return resp, h(ctx, r.(*dynamicpb.Message), resp)
				}
				if interceptor == nil {
					return run(ctx, req)
				}
				return interceptor(ctx, req, &grpc.UnaryServerInfo{FullMethod: full}, run)
			},
		})
	}
	return desc
}

// SetMessage sets field name of m to v (a generated or dynamic message).
func SetMessage(m *dynamicpb.Message, name string, v proto.Message) {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	m.Set(fd, protoreflect.ValueOfMessage(v.ProtoReflect()))
}
