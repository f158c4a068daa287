package toolservice_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/rpc/toolservice"
)

// BenchmarkGeneric is the proto→JSON step of every MCP and generic call:
// a typed search-memories response with ten results and full hints turned
// into a CallToolResponse. Run:
//
//	go test -run '^$' -bench . -benchmem ./internal/rpc/toolservice/
func BenchmarkGeneric(b *testing.B) {
	data := &memoryv1.SearchMemoriesData{Success: true, TotalCount: 10, SearchedLayers: []string{"user", "project", "company"}}
	for i := range 10 {
		data.Results = append(data.Results, &memoryv1.MemoryResult{
			Content: fmt.Sprintf("The billing service stores invoices in PostgreSQL (decision %d).", i), Layer: "project",
			Score: 0.9 - float64(i)/20, MemoryId: fmt.Sprintf("mem_%032d", i), Tags: []string{"db", "billing"},
			CreatedAt: timestamppb.Now(), SourceType: "manual",
		})
	}
	resp := &memoryv1.SearchMemoriesResponse{Data: data, AgentHints: hints.New().
		Evidence(hints.Evidence{Name: "top score", Value: 0.9, Weight: 2}).
		Next("add-memory", "low", "Store what you learn").Build("search-memories")}
	b.ReportAllocs()
	for b.Loop() {
		out, err := toolservice.Generic(resp)
		if err != nil || len(out.GetData().GetFields()["results"].GetListValue().GetValues()) != 10 {
			b.Fatalf("generic: %v", err)
		}
	}
}
