package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsvc/toolsvc/bench/internal/load"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

func sweep(name, transport string, rps ...float64) *load.Sweep {
	s := &load.Sweep{Name: name, Transport: transport}
	for i, r := range rps {
		s.Points = append(s.Points, load.Point{Concurrency: []int{1, 8, 64}[i], RPS: r, Requests: 100})
	}
	return s
}

func TestRatios(t *testing.T) {
	withErrors := sweep("toolsvc grpc", "grpc", 950, 1900, 1900)
	withErrors.Points[1].Errors = 3
	tests := []struct {
		name   string
		sweeps []*load.Sweep
		want   []float64
		met    []bool
		target float64
	}{
		{name: "grpc meets at 1, misses at 8 and 64",
			sweeps: []*load.Sweep{sweep("bare grpc-go-sync-status", "grpc", 1000, 2000, 4000), sweep("toolsvc grpc", "grpc", 950, 1200, 1000)},
			want:   []float64{0.95, 0.6, 0.25}, met: []bool{true, false, false}, target: 0.9},
		{name: "errors void a met ratio",
			sweeps: []*load.Sweep{sweep("bare grpc-go-sync-status", "grpc", 1000, 2000, 2000), withErrors},
			want:   []float64{0.95, 0.95, 0.95}, met: []bool{true, false, true}, target: 0.9},
		{name: "no baseline, no ratio", sweeps: []*load.Sweep{sweep("toolsvc grpc", "grpc", 1, 2, 3)}},
		{name: "the echo baseline carries no target",
			sweeps: []*load.Sweep{sweep("bare grpc-go", "grpc", 4000, 8000, 8000), sweep("toolsvc grpc", "grpc", 800, 1200, 1000)},
			want:   []float64{0.2, 0.15, 0.125}, met: []bool{true, true, true}, target: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ratios(tt.sweeps, []int{1, 8, 64})
			if len(got) != len(tt.want) {
				t.Fatalf("%d ratios, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, r := range got {
				if r.Ratio < tt.want[i]-1e-9 || r.Ratio > tt.want[i]+1e-9 || r.Met != tt.met[i] || r.Target != tt.target {
					t.Errorf("ratio %d = %+v, want %.2f met=%v", i, r, tt.want[i], tt.met[i])
				}
			}
		})
	}
}

func TestCountLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	lines := `{"level":"INFO","msg":"call"}
{"level":"WARN","msg":"audit queue full; record dropped"}
{"level":"WARN","msg":"slow"}
{"level":"ERROR","msg":"boom"}
`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	got := countLog(path)
	if want := (logCounts{Lines: 4, Warnings: 2, Errors: 1, AuditDropped: 1}); got != want {
		t.Errorf("countLog = %+v, want %+v", got, want)
	}
	if got := countLog(filepath.Join(t.TempDir(), "absent")); got != (logCounts{}) {
		t.Errorf("absent log counted %+v", got)
	}
}

// TestGeneratedKnowledgeLoads checks that the synthetic knowledge the
// check-knowledge benchmark uses is valid for the product's loader, with
// every constraint present.
func TestGeneratedKnowledgeLoads(t *testing.T) {
	tests := []struct {
		name           string
		files, perFile int
	}{
		{name: "small", files: 2, perFile: 4},
		{name: "benchmark shape", files: 10, perFile: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := writeKnowledge(dir, tt.files, tt.perFile); err != nil {
				t.Fatal(err)
			}
			set, problems, err := kb.LoadDir(dir)
			if err != nil || len(problems) > 0 {
				t.Fatalf("load: %v %v", err, problems)
			}
			if set.Len() != tt.files {
				t.Fatalf("%d items, want %d", set.Len(), tt.files)
			}
			for _, it := range set.All() {
				if len(it.Constraints) != tt.perFile {
					t.Errorf("%s has %d constraints, want %d", it.ID, len(it.Constraints), tt.perFile)
				}
			}
		})
	}
}

func TestSearchArgsAreDistinctQueries(t *testing.T) {
	args := searchArgs(2000)
	seen := map[string]bool{}
	for _, a := range args {
		var m struct {
			Query string `json:"query"`
			Limit int    `json:"limit"`
		}
		if err := json.Unmarshal(a, &m); err != nil || m.Query == "" || m.Limit != 10 {
			t.Fatalf("bad arguments %s: %v", a, err)
		}
		seen[m.Query] = true
	}
	// Two words out of 1,000 each: collisions are rare.
	if len(seen) < 1900 {
		t.Errorf("only %d distinct queries of 2000: the cache would answer", len(seen))
	}
}

func TestCumShare(t *testing.T) {
	profile := `      flat  flat%   sum%        cum   cum%
     0.01s 0.075%  2.34%      2.44s 18.42%  modernc.org/sqlite/lib._sqlite3Prepare
     0.03s  0.23%  2.57%      2.40s 18.11%  modernc.org/sqlite/lib._sqlite3RunParser
`
	tests := []struct {
		name, fn, want string
	}{
		{name: "present", fn: "_sqlite3Prepare", want: "18.42%"},
		{name: "absent", fn: "AppendAudit", want: "below the top of the profile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cumShare(profile, tt.fn); got != tt.want {
				t.Errorf("cumShare(%s) = %q, want %q", tt.fn, got, tt.want)
			}
		})
	}
}

// TestCarriedSections: make bench keeps the sections that a command of
// their own measures (marked under their heading) and only those.
func TestCarriedSections(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	text := "# Benchmarks\n\n## Ratios\n\n| a |\n\n## Hybrid\n\n" + measuredApart + ": go test -bench X -->\n\n| p99 |\n| 3 |\n\n" +
		"## Sweeps\n\ngenerated\n\n## Retrieval\n" + measuredApart + ": make eval -->\nrecall\n## Analysis\n\n- note " + measuredApart + "\n"
	if err := os.WriteFile(doc, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got := carriedSections(doc)
	want := "## Hybrid\n\n" + measuredApart + ": go test -bench X -->\n\n| p99 |\n| 3 |\n\n## Retrieval\n" + measuredApart + ": make eval -->\nrecall\n"
	if got != want {
		t.Errorf("carried:\n%q\nwant:\n%q", got, want)
	}
	if got := carriedSections(filepath.Join(t.TempDir(), "none.md")); got != "" {
		t.Errorf("no report: %q", got)
	}
}

func TestTargetRows(t *testing.T) {
	cpu := func(s *load.Sweep, us ...float64) *load.Sweep {
		for i := range s.Points {
			s.Points[i].ServerCPUPerRequestUs = us[i]
		}
		return s
	}
	r := &results{Sweeps: []*load.Sweep{
		cpu(sweep("toolsvc grpc", "grpc", 900, 1800, 1800), 300, 120, 80),
		cpu(sweep("bare grpc-go-sync-status", "grpc", 1000, 2000, 2000), 250, 90, 60),
		cpu(sweep(cachedReadSeries, "mcp-2026", 1, 1, 1), 0, 150, 110),
		cpu(sweep(floorSeries, "mcp-2026", 1, 1, 1), 0, 30, 30),
	}, UpstreamHops: []hopRow{{Concurrency: 8, PerBareProxy: 0.5, Target: 0.8}, {Concurrency: 64, PerBareProxy: 0.85, Target: 0.8}},
		Idle: &idleFootprint{StartupMs: 120, GoalStartupMs: 150, RSSMiB: 50, GoalRSSMiB: 40}}
	r.Ratios = ratios(r.Sweeps, []int{1, 8, 64})
	type row struct {
		measured string
		met      bool
	}
	var got []row
	for _, x := range targetRows(r) {
		got = append(got, row{x.measured, x.met})
	}
	want := []row{
		{"30 µs", true}, {"20 µs", true}, // the chain's cost; only c=64 has a goal (≤ 25)
		{"0.90×", true}, {"0.90×", true}, // gRPC same work at 8 and 64
		{"5.0×", false}, {"3.7×", true}, // cached read over the floor
		{"0.50×", false}, {"0.85×", true}, // upstream hop
		{"120 ms", true}, {"50.0 MiB", false},
	}
	if len(got) != len(want) {
		t.Fatalf("rows = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
