package interceptors_test

import (
	"testing"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolsvc/toolsvc/gen/descriptor"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

// Hot-path micro-benchmarks with allocation counts (docs/BENCHMARKS.md). Run:
//
//	go test -run '^$' -bench . -benchmem ./internal/interceptors/

func benchSearchTool(b *testing.B) *registry.Tool {
	b.Helper()
	r, err := registry.New([]registry.Service{{Desc: &memoryv1.MemoryService_ServiceDesc, Impl: memoryv1.UnimplementedMemoryServiceServer{}}},
		registry.WithSourceInfo(descriptor.Set))
	if err != nil {
		b.Fatal(err)
	}
	t, err := r.Get("search-memories", "")
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// BenchmarkDecodeArguments is the JSON→proto step of every MCP, generic
// REST and CallTool call: Struct arguments to the typed request.
func BenchmarkDecodeArguments(b *testing.B) {
	t := benchSearchTool(b)
	args, err := structpb.NewStruct(map[string]any{
		"query": "database preferences for the billing service", "layers": []any{"user", "project"},
		"limit": 10, "threshold": 0.3, "tags": []any{"db", "billing"},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		msg, err := interceptors.DecodeArguments(t, args)
		if err != nil || msg.(*memoryv1.SearchMemoriesRequest).GetLimit() != 10 {
			b.Fatalf("decode: %v %v", msg, err)
		}
	}
}

// BenchmarkValidate is protovalidate on a typed request with a warm
// validator, as the validation step runs it on every call.
func BenchmarkValidate(b *testing.B) {
	v, err := protovalidate.New(protovalidate.WithMessages(&memoryv1.SearchMemoriesRequest{}))
	if err != nil {
		b.Fatal(err)
	}
	limit := uint32(10)
	req := &memoryv1.SearchMemoriesRequest{Query: "database preferences for the billing service", Layers: []string{"user", "project"}, Limit: &limit, Tags: []string{"db", "billing"}}
	if err := v.Validate(req); err != nil {
		b.Fatalf("request must be valid: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(req); err != nil {
			b.Fatal(err)
		}
	}
}
