package ticketsrv

import (
	_ "embed"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	v1reflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1"
	v1alphareflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// contracts is tickets.proto as `buf build --exclude-imports` writes it
// (`make generate-examples`): with source info, which generated Go drops.
// Served by reflection, it gives toolsvc every field's comment, which
// becomes the parameter's description (docs/CONTRACTS.md: every parameter
// is documented).
//
//go:embed tickets.binpb
var contracts []byte

var (
	filesOnce sync.Once
	files     *protoregistry.Files
	filesErr  error
)

// Files returns the service's contracts with their comments; their imports
// resolve to the linked descriptors.
func Files() (*protoregistry.Files, error) {
	filesOnce.Do(func() {
		set := &descriptorpb.FileDescriptorSet{}
		if filesErr = proto.Unmarshal(contracts, set); filesErr != nil {
			return
		}
		files = &protoregistry.Files{}
		for _, fdp := range set.GetFile() {
			fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
			if err != nil {
				filesErr = fmt.Errorf("ticketsrv: contracts: %w", err)
				return
			}
			if filesErr = files.RegisterFile(fd); filesErr != nil {
				return
			}
		}
	})
	return files, filesErr
}

// RegisterReflection registers gRPC server reflection (v1 and v1alpha) on
// srv, serving the contracts with their comments.
func RegisterReflection(srv *grpc.Server) error {
	own, err := Files()
	if err != nil {
		return err
	}
	opts := reflection.ServerOptions{Services: srv, DescriptorResolver: resolver{own}}
	v1reflectiongrpc.RegisterServerReflectionServer(srv, reflection.NewServerV1(opts))
	v1alphareflectiongrpc.RegisterServerReflectionServer(srv, reflection.NewServer(opts))
	return nil
}

// resolver finds the commented contracts first, then the linked ones.
type resolver struct{ own *protoregistry.Files }

func (r resolver) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if fd, err := r.own.FindFileByPath(path); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

func (r resolver) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := r.own.FindDescriptorByName(name); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(name)
}
