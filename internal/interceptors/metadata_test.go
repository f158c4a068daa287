package interceptors_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolresult"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

func TestToolSeesCallMetadata(t *testing.T) {
	allowed, err := wire.NewMetadataHeaders([]string{"x-tenant-region"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *interceptors.Config) { c.MetadataHeaders = allowed })
	var seen map[string]string
	var tcMeta map[string]any
	h.mem.search = func(ctx context.Context, r *memoryv1.SearchMemoriesRequest) (*memoryv1.SearchMemoriesResponse, error) {
		seen = callctx.From(ctx).Metadata
		tcMeta = toolresult.ToolContext(callctx.From(ctx)).GetMetadata().AsMap()
		return goodSearch(ctx, r)
	}
	ctx := metadata.AppendToOutgoingContext(as("full"), "x-agent-id", "claude-code", "x-agent-version", "2.1.0",
		"x-tenant-region", "eu-west", "cookie", "sid=secret", "x-api-key", "k-secret", "user-agent", "ua/1")
	if _, err := memoryv1.NewMemoryServiceClient(h.ch).SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "q"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"client_name": "claude-code", "client_version": "2.1.0", "transport": "grpc", "header.x-tenant-region": "eu-west", "user_agent": "ua/1"}
	for k, v := range want {
		if seen[k] != v {
			t.Errorf("facts metadata %s = %q, want %q (all: %v)", k, seen[k], v, seen)
		}
	}
	for k, v := range seen {
		if v == "sid=secret" || v == "k-secret" || v == "Bearer full" {
			t.Errorf("credential in metadata: %s=%q", k, v)
		}
	}
	if hs, _ := tcMeta["headers"].(map[string]any); hs["x-tenant-region"] != "eu-west" || len(hs) != 1 {
		t.Errorf("ToolContext.metadata headers = %v", tcMeta["headers"])
	}
}
