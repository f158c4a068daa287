package hints_test

import (
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/hints"
)

// BenchmarkBuild builds the hints of a typical search result: evidence,
// two next actions, a related resource, impact and a risk. Run:
//
//	go test -run '^$' -bench . -benchmem ./internal/contract/hints/
func BenchmarkBuild(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		h := hints.New().
			Evidence(hints.Evidence{Name: "top score", Value: 0.82, Weight: 2}, hints.Evidence{Name: "coverage", Value: 0.6, Weight: 1}).
			Next("add-memory", "low", "Store the decision once it is made").
			Next("query-knowledge", "medium", "Check the database ADR").
			Related("memory", "mem_0123456789abcdef0123456789abcdef", "Billing DB decision", 0.82, nil).
			Quality(hints.QualityUnknown).
			Impact(0.7, 0.2, "recall").
			Risk("staleness", "low", "Memories may be outdated", 0.2, 0.3, "Check created_at").
			Build("search-memories")
		if h.GetConfidence() <= 0 || len(h.GetSuggestedNextActions()) != 2 {
			b.Fatalf("hints: %v", h)
		}
	}
}
