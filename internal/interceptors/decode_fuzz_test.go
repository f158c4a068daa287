package interceptors_test

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

// FuzzDecodeArguments feeds arbitrary JSON arguments to every built-in
// tool's decoder: it never panics, every failure is INVALID_INPUT, and a
// success round-trips (the decoded request re-encodes and decodes to the
// same message).
func FuzzDecodeArguments(f *testing.F) {
	reg, err := registry.New([]registry.Service{
		{Desc: &memoryv1.MemoryService_ServiceDesc},
		{Desc: &knowledgev1.KnowledgeService_ServiceDesc},
		{Desc: &syncv1.SyncService_ServiceDesc},
		{Desc: &auditv1.AuditService_ServiceDesc},
	})
	if err != nil {
		f.Fatal(err)
	}
	tools := reg.All()
	for i, seed := range []string{
		`{"content": "User prefers Go", "layer": "user", "tags": ["a"]}`,
		`{"query": "x", "limit": 5, "threshold": 0.5}`,
		`{"memoryId": "mem_00000000000000000000000000000000"}`,
		`{"files": [{"path": "a.go", "content": "package a"}], "dependencies": [{"name": "pgx"}]}`,
		`{"content": 42}`, `{"limit": -1}`, `{"unknown": true}`, `{"tags": [null]}`,
		`{"metadata": {"a": {"b": [1, "two", null, true]}}}`, `{"page": {"limit": 1e300}}`,
	} {
		f.Add(uint8(i), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		var obj map[string]any
		if json.Unmarshal(raw, &obj) != nil {
			return // not an object: transports refuse it before decoding
		}
		args, err := structpb.NewStruct(obj)
		if err != nil {
			return // not representable as a Struct (e.g. invalid UTF-8)
		}
		tool := tools[int(which)%len(tools)]
		msg, err := interceptors.DecodeArguments(tool, args)
		if err != nil {
			if te, ok := toolerr.As(err); !ok || te.Code != toolerr.InvalidInput {
				t.Fatalf("%s: decode error %v is not INVALID_INPUT", tool.Name, err)
			}
			return
		}
		again, err := protojson.Marshal(msg)
		if err != nil {
			t.Fatalf("%s: decoded request does not re-encode: %v", tool.Name, err)
		}
		back := tool.Input.New().Interface()
		if err := protojson.Unmarshal(again, back); err != nil || !proto.Equal(msg, back) {
			t.Fatalf("%s: round trip changed the request: %v", tool.Name, err)
		}
	})
}
