// Package synthetic builds a toolsvc registry of many tools from the real
// contracts, for measuring what grows with the number of tools (tools/list)
// when only a handful are compiled in: each copy of the sync service
// contract is renamed into its own proto package, its tools renamed
// (get-sync-status-0001, ...), and loaded through registry.WithResolver,
// so every synthetic tool passes the same checklist and schema derivation
// as a real one.
package synthetic

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/toolsvc/toolsvc/gen/descriptor"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

// ToolsPerCopy is how many tools one copy of the template contract holds.
const ToolsPerCopy = 2

// MaxTools bounds Registry.
const MaxTools = 20000

// Registry returns a registry of n tools (n even, at most MaxTools).
func Registry(n int) (*registry.Registry, error) {
	if n <= 0 || n%ToolsPerCopy != 0 || n > MaxTools {
		return nil, fmt.Errorf("synthetic: %d tools: want a positive multiple of %d up to %d", n, ToolsPerCopy, MaxTools)
	}
	files := new(protoregistry.Files)
	types := new(protoregistry.Types)
	var err error
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		err = files.RegisterFile(fd)
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		err = types.RegisterMessage(mt)
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	// The template keeps its comments (gen/descriptor): the registry wants
	// every parameter described.
	commented, err := registry.SourceFiles(descriptor.Set)
	if err != nil {
		return nil, err
	}
	syncFile, err := commented.FindFileByPath(syncv1.File_toolsvc_sync_v1_sync_proto.Path())
	if err != nil {
		return nil, err
	}
	template := protodesc.ToFileDescriptorProto(syncFile)
	oldPkg := "." + template.GetPackage() + "."
	var svcs []registry.Service
	for i := range n / ToolsPerCopy {
		fdp := proto.Clone(template).(*descriptorpb.FileDescriptorProto)
		pkg := fmt.Sprintf("bench.synth%05d.v1", i)
		fdp.Name = proto.String(fmt.Sprintf("bench/synth%05d.proto", i))
		fdp.Package = proto.String(pkg)
		newPkg := "." + pkg + "."
		for _, m := range fdp.GetMessageType() {
			renameRefs(m, oldPkg, newPkg)
		}
		for _, s := range fdp.GetService() {
			for _, m := range s.GetMethod() {
				m.InputType = proto.String(strings.Replace(m.GetInputType(), oldPkg, newPkg, 1))
				m.OutputType = proto.String(strings.Replace(m.GetOutputType(), oldPkg, newPkg, 1))
				spec, ok := proto.GetExtension(m.GetOptions(), toolsvcv1.E_Tool).(*toolsvcv1.Tool)
				if !ok || spec == nil {
					return nil, errors.New("synthetic: template method without a tool option")
				}
				spec = proto.Clone(spec).(*toolsvcv1.Tool)
				spec.Name = fmt.Sprintf("%s-%05d", spec.GetName(), i)
				proto.SetExtension(m.GetOptions(), toolsvcv1.E_Tool, spec)
			}
		}
		fd, err := protodesc.NewFile(fdp, files)
		if err != nil {
			return nil, fmt.Errorf("synthetic: copy %d: %w", i, err)
		}
		if err := files.RegisterFile(fd); err != nil {
			return nil, err
		}
		if err := registerMessages(types, fd.Messages()); err != nil {
			return nil, err
		}
		desc := syncv1.SyncService_ServiceDesc
		desc.ServiceName = string(fd.Services().Get(0).FullName())
		svcs = append(svcs, registry.Service{Desc: &desc, Impl: syncv1.UnimplementedSyncServiceServer{}})
	}
	return registry.New(svcs, registry.WithResolver(files, types))
}

func renameRefs(m *descriptorpb.DescriptorProto, oldPkg, newPkg string) {
	for _, f := range m.GetField() {
		if f.TypeName != nil {
			f.TypeName = proto.String(strings.Replace(f.GetTypeName(), oldPkg, newPkg, 1))
		}
	}
	for _, n := range m.GetNestedType() {
		renameRefs(n, oldPkg, newPkg)
	}
}

func registerMessages(types *protoregistry.Types, ms protoreflect.MessageDescriptors) error {
	for i := range ms.Len() {
		md := ms.Get(i)
		if md.IsMapEntry() {
			continue
		}
		if err := types.RegisterMessage(dynamicpb.NewMessageType(md)); err != nil {
			return err
		}
		if err := registerMessages(types, md.Messages()); err != nil {
			return err
		}
	}
	return nil
}
