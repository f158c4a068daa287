package registry_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	_ "buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	_ "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/registry"
	"github.com/toolsvc/toolsvc/internal/toolerr"
)

// compiled holds the test contracts compiled at test time, so broken
// definitions never need generated code.
type compiled struct {
	files *protoregistry.Files
	types *protoregistry.Types
	file  protoreflect.FileDescriptor
}

func compile(t testing.TB) compiled {
	t.Helper()
	linked := protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		fd, err := protoregistry.GlobalFiles.FindFileByPath(path)
		if err != nil {
			return protocompile.SearchResult{}, err
		}
		return protocompile.SearchResult{Desc: fd}, nil
	})
	c := protocompile.Compiler{
		Resolver: protocompile.CompositeResolver{
			&protocompile.SourceResolver{ImportPaths: []string{"testdata"}},
			linked,
		},
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	fds, err := c.Compile(context.Background(), "registrytest.proto")
	if err != nil {
		t.Fatalf("compile test contracts: %v", err)
	}
	files := new(protoregistry.Files)
	types := new(protoregistry.Types)
	fd := fds[0]
	// Re-link through protodesc so the descriptor graph is a standard one.
	fdp := protodesc.ToFileDescriptorProto(fd)
	resolver := &chainResolver{local: files}
	built, err := protodesc.NewFile(fdp, resolver)
	if err != nil {
		t.Fatalf("link test contracts: %v", err)
	}
	if err := files.RegisterFile(built); err != nil {
		t.Fatal(err)
	}
	msgs := built.Messages()
	for i := 0; i < msgs.Len(); i++ {
		if err := types.RegisterMessage(dynamicpb.NewMessageType(msgs.Get(i))); err != nil {
			t.Fatal(err)
		}
	}
	return compiled{files: files, types: types, file: built}
}

// chainResolver finds local files first, then the linked ones.
type chainResolver struct{ local *protoregistry.Files }

func (r *chainResolver) FindFileByPath(p string) (protoreflect.FileDescriptor, error) {
	if fd, err := r.local.FindFileByPath(p); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(p)
}

func (r *chainResolver) FindDescriptorByName(n protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := r.local.FindDescriptorByName(n); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(n)
}

// service describes a compiled service for the registry; its handlers are
// never called by these tests.
func (c compiled) service(name string) registry.Service {
	sd := c.file.Services().ByName(protoreflect.Name(name))
	desc := &grpc.ServiceDesc{ServiceName: string(sd.FullName())}
	for i := 0; i < sd.Methods().Len(); i++ {
		desc.Methods = append(desc.Methods, grpc.MethodDesc{MethodName: string(sd.Methods().Get(i).Name())})
	}
	return registry.Service{Desc: desc}
}

func TestBrokenDefinitionsAreRefusedWithTheRuleNamed(t *testing.T) {
	c := compile(t)
	tests := []struct {
		service string
		rule    string // substring of the violation's rule id
	}{
		{"BrokenBadNameService", "tool.contract.string.pattern"},
		{"BrokenShortDescriptionService", "tool.contract.string.min_len"},
		{"BrokenNoExamplesService", "tool.contract.repeated.min_items"},
		{"BrokenNoTagsService", "tool.contract.repeated.min_items"},
		{"BrokenCacheableNoTtlService", "tool.contract.tool.cache_ttl"},
		{"BrokenTtlNotCacheableService", "tool.contract.tool.cache_ttl"},
		{"BrokenBadPermissionService", "tool.contract.string.pattern"},
		{"BrokenQuerySideEffectService", "tool.contract.tool.query_side_effect"},
		{"BrokenQueryNotIdempotentService", "tool.contract.tool.query_side_effect"},
		{"BrokenMutationCachedService", "tool.contract.tool.mutation_cache"},
		{"BrokenMutationNoSideEffectService", registry.RuleMutationSideEffect},
		{"BrokenBadCategoryService", "tool.contract.string.in"},
		{"BrokenBadVersionService", "tool.contract.string.pattern"},
		{"BrokenShortDeprecationService", registry.RuleDeprecationWindow},
		{"BrokenMissingReplacementService", registry.RuleDeprecationReplacement},
		{"BrokenBadShapeService", registry.RuleResponseShape},
		{"BrokenBadExampleService", registry.RuleExampleParams},
		{"BrokenInvalidExampleService", registry.RuleExampleParams},
		{"BrokenReadOnlyDestructiveService", "tool.contract.tool.read_only"},
		{"NoOptionService", registry.RuleOptionPresent},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			_, err := registry.New([]registry.Service{c.service(tt.service)}, registry.WithResolver(c.files, c.types))
			ce, ok := registry.AsCheckError(err)
			if !ok {
				t.Fatalf("New accepted a broken definition (err = %v)", err)
			}
			var rules []string
			for _, v := range ce.Violations {
				rules = append(rules, v.Rule)
				if v.Method == "" {
					t.Errorf("violation %q does not name the method", v)
				}
			}
			if !slices.ContainsFunc(rules, func(r string) bool { return strings.Contains(r, tt.rule) }) {
				t.Fatalf("violations %v do not name rule %q", rules, tt.rule)
			}
			if !strings.Contains(err.Error(), ce.Violations[0].Rule) {
				t.Errorf("error text %q does not name the rule", err.Error())
			}
		})
	}
}

func TestDuplicateNameAndVersionRefused(t *testing.T) {
	c := compile(t)
	_, err := registry.New([]registry.Service{c.service("GoodService"), c.service("DuplicateService")}, registry.WithResolver(c.files, c.types))
	ce, ok := registry.AsCheckError(err)
	if !ok {
		t.Fatalf("duplicate get-widget 1.2.0 accepted: %v", err)
	}
	if len(ce.Violations) != 1 || ce.Violations[0].Rule != registry.RuleNameUnique || ce.Violations[0].Tool != "get-widget" {
		t.Fatalf("violations = %v, want %s for get-widget", ce.Violations, registry.RuleNameUnique)
	}
}

func TestVersionsResolveToHighestSemver(t *testing.T) {
	c := compile(t)
	reg, err := registry.New([]registry.Service{c.service("GoodService")}, registry.WithResolver(c.files, c.types))
	if err != nil {
		t.Fatal(err)
	}
	got, err := reg.Get("get-widget", "")
	if err != nil {
		t.Fatal(err)
	}
	// 1.10.0 > 1.2.0 numerically, although "1.10.0" < "1.2.0" as strings.
	if got.Version != "1.10.0" {
		t.Fatalf("bare name resolved to %s, want 1.10.0", got.Version)
	}
	if v, err := reg.Get("get-widget", "1.2.0"); err != nil || v.Version != "1.2.0" {
		t.Fatalf("Get(1.2.0) = %v, %v", v, err)
	}
	_, err = reg.Get("get-widget", "9.9.9")
	if te, ok := toolerr.As(err); !ok || te.Code != toolerr.NotFound {
		t.Fatalf("unknown version: err = %v, want NOT_FOUND", err)
	}
	_, err = reg.Get("no-such-tool", "")
	if te, ok := toolerr.As(err); !ok || te.Code != toolerr.NotFound {
		t.Fatalf("unknown tool: err = %v, want NOT_FOUND", err)
	}
	if n := len(reg.Versions("get-widget")); n != 2 {
		t.Fatalf("versions = %d, want 2", n)
	}
	if !got.Deprecated() || got.RemovalDate.IsZero() {
		t.Fatal("1.10.0 should be deprecated with a removal date")
	}
	if got.Def.GetInputSchema().GetFields()["properties"].GetStructValue().GetFields()["limit"].GetStructValue().GetFields()["default"].GetNumberValue() != 10 {
		t.Fatalf("field_default not carried into the input schema: %v", got.Def.GetInputSchema())
	}
	if d := reg.ByTag("widgets"); len(d) != 1 || d[0].Version != "1.10.0" {
		t.Fatalf("ByTag = %v", d)
	}
	if d := reg.ByCategory("query"); len(d) != 1 {
		t.Fatalf("ByCategory = %v", d)
	}
}

func TestTestdataIsTheOnlyContractSource(t *testing.T) {
	// Guard: the test proto must stay in testdata (never compiled into gen/).
	if _, err := os.Stat(filepath.Join("testdata", "registrytest.proto")); err != nil {
		t.Fatal(err)
	}
}
