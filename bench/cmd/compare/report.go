package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolsvc/toolsvc/bench/baselines"
	"github.com/toolsvc/toolsvc/bench/internal/load"
	"github.com/toolsvc/toolsvc/bench/internal/toolsvc"
)

func dialGRPC(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// ratio compares one toolsvc series with its baseline at one concurrency.
type ratio struct {
	Transport string `json:"transport"`
	Toolsvc   string `json:"toolsvc"`
	Baseline  string `json:"baseline"`
	// BaselineWork is what the baseline does per call: "echo" or the tool.
	BaselineWork string  `json:"baselineWork"`
	Concurrency  int     `json:"concurrency"`
	ToolsvcRPS   float64 `json:"toolsvcRps"`
	BaseRPS      float64 `json:"baselineRps"`
	Ratio        float64 `json:"ratio"`
	ToolsvcP99   float64 `json:"toolsvcP99Ms"`
	BaseP99      float64 `json:"baselineP99Ms"`
	Target       float64 `json:"target"`
	Met          bool    `json:"met"`
}

// pairs are the comparisons docs/BENCHMARKS.md sets targets for, plus others
// for context (no target). gRPC's and REST's targets are against the
// same-work baselines (the same tool on the same kind of store, no chain),
// so they measure the chain; the echo rows show the price of the whole
// product path. MCP's target is against the echo (docs/BENCHMARKS.md).
var pairs = []struct {
	toolsvc, baseline string
	target            float64
}{
	{"toolsvc " + toolsvc.GRPC, "bare " + baselines.KindGRPCSyncStatus, grpcSameWorkGoal},
	{"toolsvc " + toolsvc.GRPC, "bare " + baselines.KindGRPC, 0},
	{"toolsvc " + toolsvc.REST, "bare " + baselines.KindGatewaySyncStatus, 0.7},
	{"toolsvc " + toolsvc.REST, "bare " + baselines.KindGatewayInProcess, 0},
	{"toolsvc " + toolsvc.REST, "bare " + baselines.KindGatewayLoopback, 0},
	{"toolsvc " + toolsvc.MCPStateful, "bare " + baselines.KindMark3Stateful, 1.0},
	{"toolsvc " + toolsvc.MCPStateless, "bare " + baselines.KindMark3Stateless, 1.0},
	{"toolsvc " + toolsvc.MCPStateful, "bare " + baselines.KindMark3SyncStatus, 0},
	{"toolsvc " + toolsvc.MCPStateful, "bare " + baselines.KindGoSDKStateful, 0},
	{"toolsvc " + toolsvc.MCPStateless, "bare " + baselines.KindGoSDKStateless, 0},
	// Revision 2026-07-28 against mark3labs serving the same tool
	// in its 2026 mode (target), against its 2026 echo (the stretch), and
	// against toolsvc's own 2025 stateless path (no slower).
	{"toolsvc " + toolsvc.MCP2026, "bare " + baselines.KindMark3SyncStatusModern, 1.0},
	{"toolsvc " + toolsvc.MCP2026, "bare " + baselines.KindMark3Modern, 1.0},
	{"toolsvc " + toolsvc.MCP2026, "toolsvc " + toolsvc.MCPStateless, 1.0},
}

func ratios(sweeps []*load.Sweep, levels []int) []ratio {
	byName := map[string]*load.Sweep{}
	for _, s := range sweeps {
		byName[s.Name] = s
	}
	var out []ratio
	for _, p := range pairs {
		ts, bs := byName[p.toolsvc], byName[p.baseline]
		if ts == nil || bs == nil {
			continue
		}
		for _, c := range levels {
			tp, ok1 := ts.At(c)
			bp, ok2 := bs.At(c)
			if !ok1 || !ok2 || bp.RPS == 0 {
				continue
			}
			r := ratio{Transport: ts.Transport, Toolsvc: p.toolsvc, Baseline: p.baseline, BaselineWork: bs.Tool, Concurrency: c,
				ToolsvcRPS: tp.RPS, BaseRPS: bp.RPS, Ratio: tp.RPS / bp.RPS, ToolsvcP99: tp.P99Ms, BaseP99: bp.P99Ms, Target: p.target}
			// A ratio earned with failed calls does not count.
			r.Met = p.target == 0 || (r.Ratio >= p.target && tp.Errors == 0)
			out = append(out, r)
		}
	}
	return out
}

type machine struct {
	CPUs      int    `json:"cpus"`
	Model     string `json:"model"`
	MemoryGiB string `json:"memoryGiB"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	m.Model = procField("/proc/cpuinfo", "model name")
	if kb := procField("/proc/meminfo", "MemTotal"); kb != "" {
		var n float64
		_, _ = fmt.Sscanf(kb, "%f", &n)
		m.MemoryGiB = fmt.Sprintf("%.1f", n/(1<<20))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

func procField(file, key string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// microPackages hold the hot-path micro-benchmarks (docs/BENCHMARKS.md).
var microPackages = []string{"./internal/contract/registry/", "./internal/contract/schema/", "./internal/interceptors/", "./internal/rpc/toolservice/", "./internal/contract/hints/", "./internal/store/cache/", "./internal/server/", "./internal/base/logline/"}

// microBenchmarks runs the product's hot-path micro-benchmarks with
// allocation counts and returns their result lines.
func microBenchmarks(ctx context.Context, repo string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	args := append([]string{"test", "-run", "^$", "-bench", "^(BenchmarkNew|BenchmarkDerive|BenchmarkDecodeArguments|BenchmarkValidate|BenchmarkGeneric|BenchmarkBuild|BenchmarkKeyString|BenchmarkGRPCSyncStatus|BenchmarkGRPCAddMemory|BenchmarkTransports|BenchmarkAccessLine)$",
		"-benchmem", "-benchtime", "500ms"}, microPackages...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go test -bench: %w\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Benchmark") || strings.HasPrefix(l, "pkg:") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// upstreamHop measures the upstream hop with the e2e suite's
// TestUpstreamHopThroughput (which starts the example upstream as its own
// process) and returns its Markdown table.
func upstreamHop(ctx context.Context, repo, tmp string, per time.Duration) (string, []hopRow, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out := filepath.Join(tmp, "upstream-hop.md")
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-run", "^TestUpstreamHopThroughput$", "./internal/tests/e2e/")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "TOOLSVC_BENCH_UPSTREAM="+per.String(), "TOOLSVC_BENCH_OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("go test -run TestUpstreamHopThroughput: %w\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return "", nil, fmt.Errorf("the upstream hop wrote no table: %w", err)
	}
	var hops []hopRow
	js, err := os.ReadFile(out + ".json")
	if err != nil {
		return "", nil, fmt.Errorf("the upstream hop wrote no figures: %w", err)
	}
	if err := json.Unmarshal(js, &hops); err != nil {
		return "", nil, fmt.Errorf("the upstream hop's figures: %w", err)
	}
	return string(b), hops, nil
}

// measuredApart marks a section of docs/BENCHMARKS.md that a command of
// its own measures (named in the section): the line right under its
// heading. make bench carries such sections unchanged.
const measuredApart = "<!-- measured apart"

// carriedSections returns the sections of the report at path that are
// marked measuredApart, in their order, each up to the next "## "
// heading (the mark is the first line of the section's text); "" when there is no report or no such section.
func carriedSections(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var out, sec []string
	keep, body := false, false
	flush := func() {
		if keep {
			out = append(out, strings.TrimRight(strings.Join(sec, "\n"), "\n")+"\n")
		}
		sec, keep, body = nil, false, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "## ") {
			flush()
		} else if len(sec) > 0 && !body && strings.TrimSpace(l) != "" {
			body, keep = true, strings.HasPrefix(l, measuredApart)
		}
		sec = append(sec, l)
	}
	flush()
	return strings.Join(out, "\n")
}

// profileChain takes a CPU profile of the in-process chain benchmark
// (bench/profile) and returns the top of `go tool pprof -top`.
func profileChain(ctx context.Context, repo, tmp string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	prof := filepath.Join(tmp, "chain.prof")
	bin := filepath.Join(tmp, "profile.test")
	test := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "BenchmarkChain", "-benchtime", "2s",
		"-cpuprofile", prof, "-o", bin, "./profile/")
	test.Dir = filepath.Join(repo, "bench")
	out, err := test.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go test -cpuprofile: %w\n%s", err, out)
	}
	// Only the calls: the benchmark function runs its set-up (keys, a
	// server) once per b.N it tries, which would otherwise fill the top.
	top := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=45", "-focus", `syncServiceClient\).GetSyncStatus`, bin, prof)
	top.Dir = test.Dir
	topOut, err := top.Output()
	if err != nil {
		return "", fmt.Errorf("pprof: %w", err)
	}
	var bench []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Benchmark") {
			bench = append(bench, l)
		}
	}
	return strings.Join(bench, "\n") + "\n\n" + string(topOut), nil
}

func writeReport(w io.Writer, r *results, cfg config) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Benchmarks\n\n")
	p("Regenerated by one command, `make bench` (runs `bench/cmd/compare`; about %s on this machine). ", r.Elapsed)
	p("Raw results: `bench/results/results.json` and `bench/results/results.md`. Measured %s.\n\n", r.StartedAt.Format(time.RFC3339))
	p("**Machine:** %d CPUs (%s), %s GiB RAM, Linux %s, %s. Client and servers share these cores: ", r.Machine.CPUs, r.Machine.Model, r.Machine.MemoryGiB, r.Machine.Kernel, r.Machine.Go)
	p("every figure is for a load generator and a server competing for the same 2 CPUs, which favours cheap servers.\n\n")
	p("## Method\n\n")
	p("- Closed loop: N workers call back to back for %s after a %s warm-up, at concurrency %v (data-scale points: %s at concurrency 1 and 8). ", cfg.duration, cfg.warmup, cfg.concurrency, cfg.scaleDuration)
	p("Latency is per call at the client; p50/p95/p99 are nearest-rank. Server CPU µs/request and peak RSS come from `/proc/<pid>` of the server process.\n")
	p("- **Side by side, taking turns**: each toolsvc transport and the baselines of its ratio rows with a target (and mark3labs' same-work server beside MCP) run at the same time in their own processes, ")
	p("and at each level the measurement is cut into %d rounds in which they take turns (`load.RunInterleaved`), so a change in the machine's speed during the run falls on both sides alike. ", interleavedRounds)
	p("Measured one after the other, minutes apart, the same build's ratio moved by up to ±15%% between runs. The other baselines run on their own, one after another.\n")
	p("- **toolsvc** is a freshly built `toolsvc serve` on free loopback ports with a temporary SQLite store, seeded with one sync run (`baselines.SeedSyncStatus`), the example knowledge directory (`examples/knowledge`), and the full chain ")
	p("(auth with API keys, policy, rate limits, validation, audit to the store, metrics, JSON logs at info level). It is called with `%s`, a real fast query that reads the store. ", benchTool)
	p("The load rotates over %d API keys (principals) so that the per-principal rate limits of the tool (600/min) admit it; the rate limiter still runs on every call.\n", cfg.keys)
	p("- **Baselines** (`bench/baselines`, own process each, library defaults, no interceptors):\n")
	p("  - `bare grpc-go-sync-status` — the **same work** as toolsvc's gRPC series: a bare grpc-go server serving the product's `%s` implementation (`internal/tools/knowledgesync`) ", benchTool)
	p("over its own temporary SQLite store, opened as `toolsvc serve` opens its store (`internal/store/backends`: same pragmas, pool sizes, migrations) and seeded with the same one sync run as toolsvc's store (`baselines.SeedSyncStatus`), on the same knowledge directory loaded for the load's tenant (`baselines.SyncStatusTool`), so that its answer reports the same knowledge set and pending changes as toolsvc's. ")
	p("It is called with the same requests and API-key headers; it only fixes the caller's tenant instead of authenticating. ")
	p("The ratio of toolsvc gRPC to it is the cost of toolsvc's interceptor chain and server options alone (auth, policy, rate limits, validation of input and result, audit into the store, metrics, JSON logs, cache), and carries the target.\n")
	p("  - `bare grpc-go` — a bare grpc-go unary **echo** of a small message (no store, no tool).\n")
	p("  - `bare gateway-inproc-sync-status` — the **same work** as toolsvc's REST series: the grpc-gateway mux and handlers generated for the sync service (the routes toolsvc serves, `GET /v1/sync/status`), calling the same-work gRPC server above over bufconn, no chain.\n")
	p("  - `bare mark3labs-stateful-sync-status` — the **same work** as toolsvc's MCP series, for context (MCP's target is set against the echo): mark3labs/mcp-go with sessions serving one tool, `get-sync-status`, that runs the product's implementation on its own seeded store and answers its protojson as structured content and as text.\n")
	p("  - `bare gateway-inproc` / `bare gateway-loopback` — a bare grpc-gateway mux calling a bare grpc-go echo server over bufconn (in-process) or loopback TCP.\n")
	p("  - `bare go-sdk-*` / `bare mark3labs-*` — the official MCP go-sdk and mark3labs/mcp-go Streamable HTTP servers with an **echo** tool, stateless and stateful.\n")
	p("- Echo baselines do nothing but the transport; toolsvc does real work, so a ratio to an echo (the rows whose baseline work is `echo`) is the price of the whole product path (tool, store and chain), not of the transport or the chain alone.\n\n")
	p("Reproduce one series against a running server: `go run ./bench/cmd/toolsvc-bench --transport grpc,rest,mcp-stateful --tool get-sync-status --concurrency 1,8,64 --pid $(pgrep -n toolsvc) --p99-slo 50ms --out bin/mine` (run from the repository root; add `--api-keys-file` with an auth file's keys).\n\n")

	p("## Ratios to the bare frameworks (throughput, same run)\n\n")
	p("| transport | toolsvc | baseline | baseline work | conc. | toolsvc req/s | baseline req/s | ratio | target | toolsvc p99 ms | baseline p99 ms | |\n| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, x := range r.Ratios {
		target, verdict := "–", ""
		if x.Target > 0 {
			target = fmt.Sprintf("≥ %.1f×", x.Target)
			verdict = map[bool]string{true: "met", false: "**missed**"}[x.Met]
		}
		p("| %s | %s | %s | %s | %d | %.0f | %.0f | %.2f× | %s | %.2f | %.2f | %s |\n", x.Transport, x.Toolsvc, x.Baseline, x.BaselineWork, x.Concurrency, x.ToolsvcRPS, x.BaseRPS, x.Ratio, target, x.ToolsvcP99, x.BaseP99, verdict)
	}
	writeTargets(p, r)
	p("\n## Concurrency sweeps\n\nSLO for the recommendation: %s.\n\n", cfg.slo)
	_ = load.WriteMarkdown(&b, r.Sweeps)
	if len(r.Search) > 0 {
		p("\n## search-memories by store size\n\nSeeded through the store's bulk API (`internal/store/backends`), memories of 12–24 words from a Zipf vocabulary of 5,000 words; ")
		p("the caller sees its user and project layers and the company layer (about half the rows). Each call is one of 20,000 distinct two-word queries, so nearly every call misses the result cache. gRPC, full chain.\n\n")
		p("Target: p99 ≤ 10 ms at 100k memories on SQLite.\n\n")
		sizeTable(p, r.Search)
		_ = load.WriteMarkdown(&b, r.Search)
	}
	if len(r.Knowledge) > 0 {
		p("\n## check-knowledge by number of constraints\n\nSynthetic policies of 10 constraints each (half forbid a dependency, half forbid a code pattern in Go files); each call checks 21 dependencies and 5 Go files of about 2 KiB. gRPC, full chain.\n\n")
		sizeTable(p, r.Knowledge)
		_ = load.WriteMarkdown(&b, r.Knowledge)
	}
	if len(r.ToolsList) > 0 {
		p("\n## tools/list by number of registered tools\n\n`toolsvc serve` only loads compiled contracts, so this is the product's MCP bridge (`internal/mcpbridge`: real rendering and paging) asking ToolService for the listing through the real interceptor chain over the in-process channel (visibility and the tool-list cache live there, behind the chain) ")
		p("served in its own process over a registry of synthetic tools (`bench/internal/synthetic`: copies of the sync contract under new names, loaded through `registry.WithResolver`, so each passes the checklist and schema derivation). ")
		p("Each call is `tools/list` without a cursor: the first page (default page size 100), the visible set from ToolService's cache after the first call. MCP with sessions, development auth.\n\nTarget: p99 ≤ 2 ms with 1,000 tools (cached).\n\n")
		sizeTable(p, r.ToolsList)
		_ = load.WriteMarkdown(&b, r.ToolsList)
	}
	if len(r.ToolsListBytes) > 0 {
		writeListBytes(p, r.ToolsListBytes)
	}
	if r.Idle != nil {
		writeIdle(p, r.Idle)
	}
	if r.Micro != "" {
		p("\n## Hot-path micro-benchmarks\n\n`go test -run '^$' -bench ... -benchmem` (ns/op, bytes and allocations per op): schema derivation of every tool at start-up (`BenchmarkDerive`), JSON→proto (`interceptors.DecodeArguments`), protovalidate on a typed request, proto→JSON (`toolservice.Generic` of a 10-result search response), hint building, cache key hashing, and one `get-sync-status` call over gRPC (bufconn) through the full chain beside the same tool on a bare grpc-go server (`BenchmarkGRPCSyncStatus/chain` and `/bare`; `cpu-µs/op` is the process CPU per call, client included), `add-memory` through the full chain at 1, 8 and 64 calls in flight, each answered once its audit record is durable (`BenchmarkGRPCAddMemory`), one `get-sync-status` call on every transport through the full chain — gRPC over bufconn, REST, MCP 2025-11-25 with sessions and MCP 2026-07-28 through the HTTP handler in process, client side included (`BenchmarkTransports`) — and the access line as `internal/base/logline` and as slog's JSON handler encode it (`BenchmarkAccessLine`):\n\n```\n%s```\n", r.Micro)
	}
	if r.Profile != "" {
		p("\n## CPU profile of the chain\n\n`go test -bench BenchmarkChain -cpuprofile` of `bench/profile` (the real server wiring in-process, `get-sync-status` over the in-process channel, the same chain as gRPC), `go tool pprof -top`:\n\n```\n%s```\n", r.Profile)
	}
	if r.Upstream != "" {
		p("\n## Upstream hop\n\n`get-ticket` of the example gRPC upstream (`examples/upstreams/tickets`, its own process) called through toolsvc's full chain — ")
		p("gRPC `ToolService.CallTool` on a loopback listener, API-key auth, policy, validation, audit into SQLite, metrics, logs, then the forwarding hop with dynamic messages — ")
		p("beside the same upstream called directly with the metadata toolsvc would forward, in the same run, the two sides taking turns in 3 rounds per level. ")
		p("The client and toolsvc share one process (`go test -run TestUpstreamHopThroughput ./internal/tests/e2e/` with `TOOLSVC_BENCH_UPSTREAM` set), the upstream runs in its own, all on the same 2 CPUs. ")
		p("The direct side does almost nothing (a map lookup behind a token check), so the ratio is the chain's cost plus a second gRPC round trip. ")
		p("A third side, taking turns with the other two, is the **bare proxy**: a grpc-go server in the same process as toolsvc, with no interceptors, that forwards each request's bytes undecoded to the same upstream with the same metadata and returns the response's bytes (`bareProxy` in the test), the cheapest hop grpc-go allows. ")
		p("Its ratio to the direct call is the ceiling of any hop on this machine, where client, hop and upstream share the same 2 CPUs: the hop's two extra gRPC legs (server and client side) cost about as much CPU as the whole direct call. ")
		p("`toolsvc / bare proxy` is then what toolsvc's chain and its dynamic messages cost on top of the hop itself.\n\n%s", r.Upstream)
	}
	if len(r.Writes) > 0 {
		var t strings.Builder
		writeTable(&t, r.Writes)
		p("\n## The write row\n\n`add-memory` through the whole chain over MCP 2026-07-28, %d rotating API keys, %d calls in flight, on a fresh store, beside its floor measured in the same run (the memory row and its full-text entry in one transaction with the same durability; `bench/cmd/compare/writes.go`). ", writeKeys, writeConcurrency)
		p("Server CPU is toolsvc's process (on SQLite the engine's work included); database CPU is the PostgreSQL backends serving the series' connections. Measured alone: `go run ./bench/cmd/compare --only writes`. ")
		p("docs: \"The audit as an append, and the write path\".\n\n%s", t.String())
	}
	if r.Carried != "" {
		p("\n%s", r.Carried)
	}
	p("\n## Analysis\n\n%s\n", analysis(r))
	for _, n := range r.Notes {
		p("- %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sizeTable prints how cost grows with size: one row per sweep with the
// latency at concurrency 1 and the throughput at the highest level.
func sizeTable(p func(string, ...any), sweeps []*load.Sweep) {
	p("| size | p50 ms (c=1) | p99 ms (c=1) | server CPU µs/call (c=1) | best req/s | errors |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, s := range sweeps {
		one, ok := s.At(1)
		if !ok || len(s.Points) == 0 {
			continue
		}
		best, errs := 0.0, 0
		for _, pt := range s.Points {
			best = max(best, pt.RPS)
			errs += pt.Errors
		}
		p("| %s | %.2f | %.2f | %.0f | %.0f | %d |\n", s.Name, one.P50Ms, one.P99Ms, one.ServerCPUPerRequestUs, best, errs)
	}
	p("\n")
}

// writeListBytes renders the sizes of the first tools/list page, whole,
// as served by default, and compacted.
func writeListBytes(p func(string, ...any), sizes []listBytes) {
	p("\n### tools/list bytes, full, default and compacted\n\nThe response body of the first `tools/list` page (page size 100) of the same bridge and synthetic registry: with every schema whole (`--mcp-list-full-schemas`: the result envelope written out in each outputSchema), as served by default (the outputSchema abridged, docs/MCP.md), and by default with `--mcp-list-description-max-chars %d --mcp-list-strip-schema-metadata` (descriptions normalised and capped at a word boundary; `description`, `examples`, `example`, `title`, `default`, `$comment`, `markdownDescription` dropped from the schemas). Bytes, not timings: deterministic on any machine. Per built-in tool: \"What tools/list costs an agent\".\n\n", compactDescriptionChars)
	p("| registered tools | full bytes | default bytes | compacted bytes | default saves | compacted saves |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, s := range sizes {
		saved := func(b int) float64 {
			if s.Full <= 0 {
				return 0
			}
			return 100 * float64(s.Full-b) / float64(s.Full)
		}
		p("| %d | %d | %d | %d | %.1f%% | %.1f%% |\n", s.Tools, s.Full, s.Default, s.Compact, saved(s.Default), saved(s.Compact))
	}
}
