package main

import (
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/bench/internal/load"
)

// TestNotesQuoteTheRun: the explanatory text quotes the figures of the
// results it is rendered with, and says so when a figure was not measured,
// instead of carrying fixed numbers from an older run.
func TestNotesQuoteTheRun(t *testing.T) {
	r := &results{
		Ratios: []ratio{
			{Transport: "grpc", Baseline: "bare grpc-go-sync-status", Concurrency: 1, Ratio: 0.811},
			{Transport: "grpc", Baseline: "bare grpc-go-sync-status", Concurrency: 8, Ratio: 0.774},
			{Transport: "mcp-stateful", Baseline: "bare mark3labs-stateful-sync-status", Concurrency: 64, Ratio: 1.234},
		},
		Sweeps: []*load.Sweep{{Name: "toolsvc grpc", Points: []load.Point{{Concurrency: 8, ServerCPUPerRequestUs: 123.4}}}},
		Micro: "BenchmarkValidate-2   206061   3088 ns/op   384 B/op   20 allocs/op\n" +
			"BenchmarkGRPCSyncStatus/chain-c64-2   10953   48347 ns/op   95.04 cpu-µs/op   21829 B/op   313 allocs/op\n",
	}
	got := renderNotes(r)
	for _, want := range []string{
		"gRPC is at 0.81× and 0.77× at concurrency 1 and 8",
		"spends 123 µs of CPU per call",
		"(BenchmarkValidate: 3088 ns)",
		"95.04 µs and\n  313 allocations per call",
		"with the whole chain is at 1.23× at concurrency 64",
		"REST at " + notMeasured,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("notes lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "{{") {
		t.Errorf("an action was not rendered:\n%s", got)
	}
	empty := renderNotes(&results{})
	if n := strings.Count(empty, notMeasured); n < 10 {
		t.Errorf("with no figures, %d placeholders say so; want every figure:\n%s", n, empty)
	}
}
