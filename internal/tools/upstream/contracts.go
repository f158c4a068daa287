package upstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"google.golang.org/grpc"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// fetchReflection reads every file an upstream's server reflection
// describes (its services and their transitive imports).
func fetchReflection(ctx context.Context, conn grpc.ClientConnInterface) ([]*descriptorpb.FileDescriptorProto, error) {
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = stream.CloseSend() }()
	ask := func(req *reflectionpb.ServerReflectionRequest) (*reflectionpb.ServerReflectionResponse, error) {
		if err := stream.Send(req); err != nil {
			return nil, err
		}
		resp, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		if e := resp.GetErrorResponse(); e != nil {
			return nil, fmt.Errorf("reflection: %s", e.GetErrorMessage())
		}
		return resp, nil
	}
	resp, err := ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
	if err != nil {
		return nil, err
	}
	files := map[string]*descriptorpb.FileDescriptorProto{}
	add := func(resp *reflectionpb.ServerReflectionResponse) error {
		for _, b := range resp.GetFileDescriptorResponse().GetFileDescriptorProto() {
			fd := &descriptorpb.FileDescriptorProto{}
			if err := proto.Unmarshal(b, fd); err != nil {
				return fmt.Errorf("reflection: a file descriptor does not decode: %w", err)
			}
			files[fd.GetName()] = fd
		}
		return nil
	}
	for _, svc := range resp.GetListServicesResponse().GetService() {
		name := svc.GetName()
		if strings.HasPrefix(name, "grpc.reflection.") || strings.HasPrefix(name, "grpc.health.") {
			continue
		}
		r, err := ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: name}})
		if err != nil {
			return nil, err
		}
		if err := add(r); err != nil {
			return nil, err
		}
	}
	// grpc-go sends each file once per stream; ask for any import still
	// missing by name.
	for {
		var missing []string
		for _, fd := range files {
			for _, dep := range fd.GetDependency() {
				if _, ok := files[dep]; !ok && !slices.Contains(missing, dep) {
					missing = append(missing, dep)
				}
			}
		}
		if len(missing) == 0 {
			break
		}
		for _, dep := range missing {
			if _, err := protoregistry.GlobalFiles.FindFileByPath(dep); err == nil {
				files[dep] = nil // linked into toolsvc: the linked one is used
				continue
			}
			r, err := ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileByFilename{FileByFilename: dep}})
			if err != nil {
				return nil, err
			}
			if err := add(r); err != nil {
				return nil, err
			}
			if _, ok := files[dep]; !ok {
				return nil, fmt.Errorf("reflection: import %s is not served", dep)
			}
		}
	}
	out := make([]*descriptorpb.FileDescriptorProto, 0, len(files))
	for _, fd := range files {
		if fd != nil {
			out = append(out, fd)
		}
	}
	return out, nil
}

// readDescriptorSet reads a binary FileDescriptorSet (`buf build -o`).
func readDescriptorSet(path string) ([]*descriptorpb.FileDescriptorProto, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	set := &descriptorpb.FileDescriptorSet{}
	if err := proto.Unmarshal(b, set); err != nil {
		return nil, fmt.Errorf("descriptor set %s: not a FileDescriptorSet: %w", path, err)
	}
	return set.GetFile(), nil
}

// contracts are an upstream's descriptors as toolsvc serves them.
type contracts struct {
	files *protoregistry.Files
	// services maps a service's full name to its tool methods.
	services map[string][]*method
}

// method is one upstream RPC served as a tool: Tool.Method's output is a
// synthetic envelope {data, agent_hints, metadata} whose data is the
// upstream's response (without its AgentHints field, which becomes the
// hints), so that the one chain checks and completes it as any result.
type method struct {
	name string // method name
	path string // /package.Service/Method, as the upstream serves it
	in   protoreflect.MessageDescriptor
	resp protoreflect.MessageDescriptor // the upstream's response
	// hints is resp's toolsvc.v1.AgentHints field, or nil.
	hints protoreflect.FieldDescriptor
	// data is the type of the envelope's data: resp, or a copy of it
	// without hints.
	data     protoreflect.MessageDescriptor
	envelope protoreflect.MessageDescriptor
}

var (
	hintsName    = (&toolsvcv1.AgentHints{}).ProtoReflect().Descriptor().FullName()
	metadataName = (&toolsvcv1.ResultMetadata{}).ProtoReflect().Descriptor().FullName()
)

// buildContracts turns an upstream's files into what the registry reads:
// files linked into toolsvc (toolsvc/v1, buf/validate, google/...) that
// declare no service are the linked ones, so that an upstream's AgentHints
// is toolsvc's; every RPC
// carrying (toolsvc.v1.tool), or named by an overlay, is a tool, and the
// others are left out.
func buildContracts(fds []*descriptorpb.FileDescriptorProto, overlays map[string]*toolsvcv1.Tool) (*contracts, error) {
	byName := map[string]*descriptorpb.FileDescriptorProto{}
	for _, fd := range fds {
		byName[fd.GetName()] = fd
	}
	// First pass: the files as given, to read the descriptors.
	orig, err := register(fds, byName, nil)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	modified := map[string]*descriptorpb.FileDescriptorProto{}
	type pending struct {
		svc    string
		method string
		resp   protoreflect.MessageDescriptor
	}
	var todo []pending
	for _, fd := range fds {
		if len(fd.GetService()) == 0 {
			continue
		}
		mod := proto.Clone(fd).(*descriptorpb.FileDescriptorProto)
		changed := false
		dataCopies := map[string]string{}
		for _, sp := range mod.GetService() {
			svcName := qualify(mod.GetPackage(), sp.GetName())
			var kept []*descriptorpb.MethodDescriptorProto
			for _, mp := range sp.GetMethod() {
				key := svcName + "/" + mp.GetName()
				spec := overlays[key]
				if spec != nil {
					used[key] = true
					if mp.Options == nil {
						mp.Options = &descriptorpb.MethodOptions{}
					}
					proto.SetExtension(mp.Options, toolsvcv1.E_Tool, spec)
				} else if !hasToolOption(orig, svcName, mp.GetName()) {
					continue // not a tool: never callable through toolsvc
				}
				d, err := orig.FindDescriptorByName(protoreflect.FullName(strings.TrimPrefix(mp.GetOutputType(), ".")))
				if err != nil {
					return nil, fmt.Errorf("%s: response type: %w", key, err)
				}
				resp, ok := d.(protoreflect.MessageDescriptor)
				if !ok {
					return nil, fmt.Errorf("%s: response type is not a message", key)
				}
				dataType := resp.FullName()
				if hf := hintsField(resp); hf != nil {
					// A copy of the response without its hints is the data.
					cp, ok := dataCopies[string(resp.FullName())]
					if !ok {
						cp = uniqueName(mod, string(resp.Name())+"Data")
						dp := protodesc.ToDescriptorProto(resp)
						dp.Name = proto.String(cp)
						dp.Field = slices.DeleteFunc(dp.Field, func(f *descriptorpb.FieldDescriptorProto) bool { return f.GetNumber() == int32(hf.Number()) })
						dp.OneofDecl = keepUsedOneofs(dp)
						mod.MessageType = append(mod.MessageType, dp)
						dataCopies[string(resp.FullName())] = cp
					}
					dataType = protoreflect.FullName(qualify(mod.GetPackage(), cp))
				}
				env := uniqueName(mod, mp.GetName()+"ToolResult")
				mod.MessageType = append(mod.MessageType, envelope(env, dataType))
				mp.OutputType = proto.String("." + qualify(mod.GetPackage(), env))
				kept = append(kept, mp)
				todo = append(todo, pending{svc: svcName, method: mp.GetName(), resp: resp})
			}
			if len(kept) != len(sp.GetMethod()) {
				sp.Method = kept
			}
			changed = changed || len(kept) > 0
		}
		if changed {
			for _, dep := range []string{"toolsvc/v1/hints.proto", "toolsvc/v1/result.proto"} {
				if !slices.Contains(mod.Dependency, dep) {
					mod.Dependency = append(mod.Dependency, dep)
				}
			}
			modified[mod.GetName()] = mod
		}
	}
	for key := range overlays {
		if !used[key] {
			return nil, fmt.Errorf("overlay %s: the upstream serves no such method", key)
		}
	}
	files, err := register(fds, byName, modified)
	if err != nil {
		return nil, err
	}
	c := &contracts{files: files, services: map[string][]*method{}}
	for _, p := range todo {
		d, err := files.FindDescriptorByName(protoreflect.FullName(p.svc))
		if err != nil {
			return nil, err
		}
		md := d.(protoreflect.ServiceDescriptor).Methods().ByName(protoreflect.Name(p.method))
		env := md.Output()
		// The response as served, resolved in the final files.
		rd, err := files.FindDescriptorByName(p.resp.FullName())
		if err != nil {
			return nil, err
		}
		resp := rd.(protoreflect.MessageDescriptor)
		c.services[p.svc] = append(c.services[p.svc], &method{
			name: p.method, path: "/" + p.svc + "/" + p.method, in: md.Input(), resp: resp,
			hints: hintsField(resp), data: env.Fields().ByName("data").Message(), envelope: env,
		})
	}
	return c, nil
}

// register builds a Files from fds in dependency order, with the linked
// descriptor for every file toolsvc links and replace's version of the
// files it names.
func register(fds []*descriptorpb.FileDescriptorProto, byName, replace map[string]*descriptorpb.FileDescriptorProto) (*protoregistry.Files, error) {
	files := &protoregistry.Files{}
	done := map[string]bool{}
	var visit func(name string, depth int) error
	visit = func(name string, depth int) error {
		if done[name] {
			return nil
		}
		if depth > 64 {
			return fmt.Errorf("import cycle at %s", name)
		}
		done[name] = true
		fd, ok := replace[name]
		if !ok {
			fd, ok = byName[name]
		}
		// A file toolsvc links (toolsvc/v1, buf/validate, google/...) is
		// the linked one, unless the upstream's declares services: those
		// are always the upstream's own.
		if linked, err := protoregistry.GlobalFiles.FindFileByPath(name); err == nil && (!ok || len(fd.GetService()) == 0) {
			return registerLinked(files, linked, done)
		}
		if !ok {
			return fmt.Errorf("import %s is missing from the contracts", name)
		}
		for _, dep := range fd.GetDependency() {
			if err := visit(dep, depth+1); err != nil {
				return err
			}
		}
		f, err := protodesc.NewFile(fd, files)
		if err != nil {
			return fmt.Errorf("contract %s: %w", name, err)
		}
		return files.RegisterFile(f)
	}
	for _, fd := range fds {
		if err := visit(fd.GetName(), 0); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// registerLinked registers a linked file and its imports.
func registerLinked(files *protoregistry.Files, fd protoreflect.FileDescriptor, done map[string]bool) error {
	imports := fd.Imports()
	for i := range imports.Len() {
		imp := imports.Get(i)
		if done[imp.Path()] {
			continue
		}
		done[imp.Path()] = true
		if err := registerLinked(files, imp.FileDescriptor, done); err != nil {
			return err
		}
	}
	if _, err := files.FindFileByPath(fd.Path()); err == nil {
		return nil
	}
	return files.RegisterFile(fd)
}

func hasToolOption(files *protoregistry.Files, svc, name string) bool {
	d, err := files.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return false
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return false
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil || md.Options() == nil {
		return false
	}
	b, err := proto.Marshal(md.Options())
	if err != nil {
		return false
	}
	opts := &descriptorpb.MethodOptions{}
	if err := (proto.UnmarshalOptions{Resolver: protoregistry.GlobalTypes}).Unmarshal(b, opts); err != nil {
		return false
	}
	spec, _ := proto.GetExtension(opts, toolsvcv1.E_Tool).(*toolsvcv1.Tool)
	return spec != nil && spec.GetName() != ""
}

// hintsField is the response's singular toolsvc.v1.AgentHints field.
func hintsField(md protoreflect.MessageDescriptor) protoreflect.FieldDescriptor {
	fields := md.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if f.Kind() == protoreflect.MessageKind && !f.IsList() && !f.IsMap() && f.Message().FullName() == hintsName {
			return f
		}
	}
	return nil
}

func envelope(name string, data protoreflect.FullName) *descriptorpb.DescriptorProto {
	field := func(n string, num int32, typ string) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{
			Name: proto.String(n), JsonName: proto.String(jsonName(n)), Number: proto.Int32(num),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Type:  descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String("." + typ),
		}
	}
	return &descriptorpb.DescriptorProto{
		Name: proto.String(name),
		Field: []*descriptorpb.FieldDescriptorProto{
			field("data", 1, string(data)),
			field("agent_hints", 2, string(hintsName)),
			field("metadata", 3, string(metadataName)),
		},
	}
}

func jsonName(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// keepUsedOneofs drops oneof declarations no field refers to any more
// and renumbers the fields' indexes.
func keepUsedOneofs(dp *descriptorpb.DescriptorProto) []*descriptorpb.OneofDescriptorProto {
	used := map[int32]bool{}
	for _, f := range dp.GetField() {
		if f.OneofIndex != nil {
			used[f.GetOneofIndex()] = true
		}
	}
	var out []*descriptorpb.OneofDescriptorProto
	remap := map[int32]int32{}
	for i, o := range dp.GetOneofDecl() {
		if used[int32(i)] {
			remap[int32(i)] = int32(len(out))
			out = append(out, o)
		}
	}
	for _, f := range dp.GetField() {
		if f.OneofIndex != nil {
			f.OneofIndex = proto.Int32(remap[f.GetOneofIndex()])
		}
	}
	return out
}

func uniqueName(fd *descriptorpb.FileDescriptorProto, base string) string {
	name := base
	for i := 2; ; i++ {
		if !slices.ContainsFunc(fd.GetMessageType(), func(m *descriptorpb.DescriptorProto) bool { return m.GetName() == name }) {
			return name
		}
		name = fmt.Sprintf("%s%d", base, i)
	}
}

func qualify(pkg, name string) string {
	if pkg == "" {
		return name
	}
	return pkg + "." + name
}

var errNoTools = errors.New("the upstream serves no RPC with the (toolsvc.v1.tool) option and the upstreams file gives no overlay")
