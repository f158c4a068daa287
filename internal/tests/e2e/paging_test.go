package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestPagingOnEveryTransport: a search's cursor pages through the same
// result set over gRPC, REST and MCP, each memory once; a cursor of
// another request is INVALID_INPUT naming the cursor on each.
func TestPagingOnEveryTransport(t *testing.T) {
	words := []string{"amber", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kelp", "lagoon"}
	for _, tr := range transports(t, testserver.Options{}) {
		t.Run(tr.Name(), func(t *testing.T) {
			ctx := context.Background()
			for i, w := range words {
				o, err := tr.Call(ctx, "", "add-memory", map[string]any{
					"content": fmt.Sprintf("invoices %s %s %s stored (%d)", w, words[(i+3)%len(words)], words[(i+7)%len(words)], i),
					"layer":   "company"}, nil)
				if err != nil || o.Code != "OK" {
					t.Fatalf("add-memory: %v %s %v", err, o.Code, o.Error)
				}
			}
			seen := map[string]int{}
			args := map[string]any{"query": "invoices", "limit": 5, "threshold": 0}
			var first string
			for page := 0; page < 10; page++ {
				o, err := tr.Call(ctx, "", "search-memories", args, nil)
				if err != nil || o.Code != "OK" {
					t.Fatalf("page %d: %v %s %v", page, err, o.Code, o.Error)
				}
				data, _ := o.Result["data"].(map[string]any)
				results, _ := data["results"].([]any)
				for _, r := range results {
					seen[r.(map[string]any)["memoryId"].(string)]++
				}
				next, _ := data["nextCursor"].(string)
				if next == "" {
					break
				}
				if first == "" {
					first = next
				}
				args = map[string]any{"query": "invoices", "limit": 5, "threshold": 0, "cursor": next}
			}
			if len(seen) != len(words) {
				t.Errorf("%d memories over the pages, want %d", len(seen), len(words))
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("%s shown %d times", id, n)
				}
			}
			o, err := tr.Call(ctx, "", "search-memories", map[string]any{"query": "receipts", "cursor": first}, nil)
			if err != nil || o.Code != "INVALID_INPUT" {
				t.Fatalf("a cursor of another query: %v %s, want INVALID_INPUT", err, o.Code)
			}
			vs, _ := o.Error["fieldViolations"].([]any)
			if len(vs) != 1 || vs[0].(map[string]any)["field"] != "cursor" {
				t.Errorf("violations %v, want one on cursor", o.Error["fieldViolations"])
			}
		})
	}
}
