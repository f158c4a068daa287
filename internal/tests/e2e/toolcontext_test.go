package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolresult"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// contextRecorder is the real memory service, recording the ToolContext
// metadata each search-memories call receives.
type contextRecorder struct {
	memoryv1.MemoryServiceServer
	mu   sync.Mutex
	seen []map[string]any
}

func (r *contextRecorder) SearchMemories(ctx context.Context, req *memoryv1.SearchMemoriesRequest) (*memoryv1.SearchMemoriesResponse, error) {
	r.mu.Lock()
	r.seen = append(r.seen, toolresult.ToolContext(callctx.From(ctx)).GetMetadata().AsMap())
	r.mu.Unlock()
	return r.MemoryServiceServer.SearchMemories(ctx, req)
}

func (r *contextRecorder) last(t *testing.T) map[string]any {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		t.Fatal("the tool was not called")
	}
	return r.seen[len(r.seen)-1]
}

func (r *contextRecorder) services(ctx context.Context, d server.Deps) ([]registry.Service, func(), error) {
	svcs, cleanup, err := server.Builtin(ctx, d)
	for i := range svcs {
		if real, ok := svcs[i].Impl.(memoryv1.MemoryServiceServer); ok && svcs[i].Desc == &memoryv1.MemoryService_ServiceDesc {
			r.MemoryServiceServer = real
			svcs[i].Impl = r
		}
	}
	return svcs, cleanup, err
}

// TestToolContextMetadataOnEveryTransport: a tool called over gRPC, REST
// and MCP receives the ToolContext metadata docs/OPERATIONS.md ("What
// tools receive") promises: the transport, the client's name and
// version, its User-Agent and the headers the operator allowed, and
// never a credential, even one the client sends in an allowed-looking
// header.
func TestToolContextMetadataOnEveryTransport(t *testing.T) {
	rec := &contextRecorder{}
	opts := testserver.Options{Services: rec.services, Configure: func(c *server.Config) {
		c.ToolMetadataHeaders = []string{"x-tenant-region"}
	}}
	secrets := map[string]string{"Cookie": "sid=cookie-secret", "X-Api-Key": "api-key-secret"}
	for _, tr := range transports(t, opts) {
		t.Run(tr.Name(), func(t *testing.T) {
			headers := map[string]string{"X-Tenant-Region": "eu-west", "User-Agent": "probe-client/3.2 (linux)"}
			for k, v := range secrets {
				headers[k] = v
			}
			if tr.Name() == "grpc" { // grpc-go sends its own User-Agent; a gRPC client names itself so
				headers["X-Agent-Id"], headers["X-Agent-Version"] = "probe-agent", "9.9"
			}
			o, err := tr.Call(context.Background(), "", "search-memories", map[string]any{"query": "invoices"}, headers)
			if err != nil || o.Code != "OK" {
				t.Fatalf("call: %v %s %v", err, o.Code, o.Error)
			}
			md := rec.last(t)
			if md["transport"] != tr.Name() {
				t.Errorf("transport = %v, want %s", md["transport"], tr.Name())
			}
			hs, _ := md["headers"].(map[string]any)
			if hs["x-tenant-region"] != "eu-west" {
				t.Errorf("headers = %v, want x-tenant-region eu-west", md["headers"])
			}
			if len(hs) != 1 {
				t.Errorf("headers = %v: only the allowed header belongs there", hs)
			}
			wantUA, wantName, wantVersion := "probe-client/3.2", "probe-client", "3.2"
			switch tr.Name() {
			case "mcp": // the clientInfo of initialize wins over the User-Agent
				wantName, wantVersion = "e2e", "1.0.0"
			case "grpc":
				wantUA, wantName, wantVersion = "grpc-go/", "probe-agent", "9.9"
			}
			if ua, _ := md["user_agent"].(string); !strings.HasPrefix(ua, wantUA) {
				t.Errorf("user_agent = %v, want %s…", md["user_agent"], wantUA)
			}
			if md["client_name"] != wantName || md["client_version"] != wantVersion {
				t.Errorf("client = %v %v, want %s %s", md["client_name"], md["client_version"], wantName, wantVersion)
			}
			all, _ := json.Marshal(md)
			for _, v := range secrets {
				if strings.Contains(string(all), v) {
					t.Errorf("a credential reached the tool: %s", all)
				}
			}
		})
	}
}
