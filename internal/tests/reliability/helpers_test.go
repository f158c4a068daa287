package reliability

import (
	"context"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// devTenant is the tenant of the development-mode principal.
const devTenant = "default"

// countMemories counts a tenant's memories straight from the store.
func countMemories(tb testing.TB, s *testserver.Server, tenant string) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := s.Store().CountMemories(ctx, tenant)
	if err != nil {
		tb.Fatalf("count memories: %v", err)
	}
	return n
}

// seedMemory adds a memory over gRPC in development mode.
func seedMemory(tb testing.TB, s *testserver.Server, content string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o, err := grpcCall(ctx, s.Conn, "", "add-memory", map[string]any{"content": content}, nil)
	if err != nil || o.Code != "OK" {
		tb.Fatalf("seed memory: %v %+v", err, o)
	}
	return o.Result["data"].(map[string]any)["memoryId"].(string)
}

// assertHealthy checks that a normal call over transport tr still works.
func assertHealthy(tb testing.TB, s *testserver.Server, tr string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := map[string]any{"query": "apple pie recipes"}
	var (
		o   outcome
		err error
	)
	switch tr {
	case trGRPC:
		o, err = grpcCall(ctx, s.Conn, "", "search-memories", args, nil)
	case trREST:
		o, err = restCall(ctx, s.HTTP, "", "search-memories", []byte(`{"query": "apple pie recipes"}`), nil)
	case trMCP:
		var mc *mcpClient
		if mc, err = newMCPClient(ctx, s.HTTP, "", nil); err == nil {
			o, err = mc.callRaw(ctx, "search-memories", []byte(`{"query": "apple pie recipes"}`))
		}
	}
	if err != nil || o.Code != "OK" {
		tb.Fatalf("a normal call over %s failed afterwards: %v %+v", tr, err, o)
	}
}
