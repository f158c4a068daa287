package main

import (
	"fmt"

	"github.com/toolsvc/toolsvc/bench/baselines"
	"github.com/toolsvc/toolsvc/bench/internal/load"
	"github.com/toolsvc/toolsvc/bench/internal/toolsvc"
)

// hopRow is one level of the upstream hop in machine-readable form, as
// TestUpstreamHopThroughput writes it beside its table.
type hopRow struct {
	Concurrency  int     `json:"concurrency"`
	ToolsvcRPS   float64 `json:"toolsvcRps"`
	BareProxyRPS float64 `json:"bareProxyRps"`
	PerBareProxy float64 `json:"toolsvcPerBareProxy"`
	Target       float64 `json:"target"`
}

// targetRow is one line of the table of the chain's cost targets.
type targetRow struct {
	what     string
	conc     int // 0: not a concurrency level
	measured string
	goal     string
	met      bool
	detail   string
}

// Targets of the chain's cost (docs/BENCHMARKS.md, "Targets of the
// chain's cost"): server CPU per call and throughput, same run, taking
// turns.
const (
	chainCostGoalUs   = 25.0 // toolsvc gRPC − bare same-work server, c=64
	grpcSameWorkGoal  = 0.9  // throughput, c=8 and 64
	cachedReadGoal    = 4.0  // × the net/http floor's CPU per call
	mcp2026EchoGoal   = 1.0  // × mark3labs' 2026 echo
	targetConcurrency = 64
)

// targetRows computes the rows of the chain's cost targets from a run.
func targetRows(r *results) []targetRow {
	byName := map[string]*load.Sweep{}
	for _, s := range r.Sweeps {
		byName[s.Name] = s
	}
	at := func(name string, c int) (load.Point, bool) {
		s := byName[name]
		if s == nil {
			return load.Point{}, false
		}
		return s.At(c)
	}
	var rows []targetRow
	for _, c := range []int{8, targetConcurrency} {
		t, ok1 := at("toolsvc "+toolsvc.GRPC, c)
		b, ok2 := at("bare "+baselines.KindGRPCSyncStatus, c)
		if !ok1 || !ok2 {
			continue
		}
		cost := t.ServerCPUPerRequestUs - b.ServerCPUPerRequestUs
		row := targetRow{what: "the chain's own cost: toolsvc gRPC − bare same-work server, server CPU per call", conc: c,
			measured: fmt.Sprintf("%.0f µs", cost), goal: "–", met: true,
			detail: fmt.Sprintf("%.0f − %.0f µs", t.ServerCPUPerRequestUs, b.ServerCPUPerRequestUs)}
		if c == targetConcurrency {
			row.goal, row.met = fmt.Sprintf("≤ %.0f µs", chainCostGoalUs), cost <= chainCostGoalUs
		}
		rows = append(rows, row)
	}
	for _, x := range r.Ratios {
		if x.Concurrency == 1 {
			continue
		}
		switch {
		case x.Toolsvc == "toolsvc "+toolsvc.GRPC && x.Baseline == "bare "+baselines.KindGRPCSyncStatus:
			rows = append(rows, targetRow{what: "gRPC same-work throughput, toolsvc / bare", conc: x.Concurrency,
				measured: fmt.Sprintf("%.2f×", x.Ratio), goal: fmt.Sprintf("≥ %.1f×", grpcSameWorkGoal), met: x.Ratio >= grpcSameWorkGoal,
				detail: fmt.Sprintf("%.0f / %.0f req/s", x.ToolsvcRPS, x.BaseRPS)})
		case x.Toolsvc == "toolsvc "+toolsvc.MCP2026 && x.Baseline == "bare "+baselines.KindMark3Modern:
			rows = append(rows, targetRow{what: "MCP 2026 get-sync-status through the chain / mark3labs' bare 2026 echo, throughput", conc: x.Concurrency,
				measured: fmt.Sprintf("%.2f×", x.Ratio), goal: fmt.Sprintf("≥ %.1f×", mcp2026EchoGoal), met: x.Ratio >= mcp2026EchoGoal,
				detail: fmt.Sprintf("%.0f / %.0f req/s", x.ToolsvcRPS, x.BaseRPS)})
		}
	}
	for _, c := range []int{8, targetConcurrency} {
		t, ok1 := at(cachedReadSeries, c)
		f, ok2 := at(floorSeries, c)
		if !ok1 || !ok2 || f.ServerCPUPerRequestUs == 0 {
			continue
		}
		x := t.ServerCPUPerRequestUs / f.ServerCPUPerRequestUs
		rows = append(rows, targetRow{what: "cached read (MCP 2026 show-knowledge) / net/http floor, server CPU per call", conc: c,
			measured: fmt.Sprintf("%.1f×", x), goal: fmt.Sprintf("≤ %.0f×", cachedReadGoal), met: x <= cachedReadGoal && t.Errors == 0,
			detail: fmt.Sprintf("%.0f / %.0f µs", t.ServerCPUPerRequestUs, f.ServerCPUPerRequestUs)})
	}
	for _, h := range r.UpstreamHops {
		rows = append(rows, targetRow{what: "upstream hop: toolsvc / bare byte proxy, throughput", conc: h.Concurrency,
			measured: fmt.Sprintf("%.2f×", h.PerBareProxy), goal: fmt.Sprintf("≥ %.1f×", h.Target), met: h.PerBareProxy >= h.Target,
			detail: fmt.Sprintf("%.0f / %.0f req/s", h.ToolsvcRPS, h.BareProxyRPS)})
	}
	if f := r.Idle; f != nil {
		rows = append(rows,
			targetRow{what: "start-up to ready, embedded default, existing database", measured: fmt.Sprintf("%.0f ms", f.StartupMs),
				goal: fmt.Sprintf("≤ %.0f ms", f.GoalStartupMs), met: f.StartupMs <= f.GoalStartupMs},
			targetRow{what: "idle RSS", measured: fmt.Sprintf("%.1f MiB", f.RSSMiB), goal: fmt.Sprintf("≤ %.0f MiB", f.GoalRSSMiB),
				met: f.RSSMiB <= f.GoalRSSMiB, detail: fmt.Sprintf("%.1f anonymous + %.1f file-backed", f.AnonMiB, f.FileMiB)})
	}
	return rows
}

// writeTargets renders the table of the chain's cost targets.
func writeTargets(p func(string, ...any), r *results) {
	rows := targetRows(r)
	if len(rows) == 0 {
		return
	}
	p("\n## Targets of the chain's cost\n\n")
	p("Every call toolsvc serves pays the chain (auth, tenant, permissions, rate limits, validation, cache, idempotency, audit, metrics, traces, access log). ")
	p("Its targets, from this run (server CPU per call from `/proc/<pid>` of each server, the two sides of a row taking turns in the same run). ")
	p("The chain's own cost is toolsvc's gRPC series minus the bare same-work server's (the same tool on the same kind of store, no chain); ")
	p("the cached read is `show-knowledge` of one item over MCP 2026-07-28 rotating over %d API keys, served from the result cache after each principal's first call, ", cachedReadKeys)
	p("beside `bare %s`, net/http reading the body and writing a fixed JSON-RPC answer; the upstream hop's figures are those of \"Upstream hop\" below. ", baselines.KindHTTPFloor)
	p("Why each missed target misses: \"Where the chain's time goes\".\n\n")
	p("| target | conc. | measured | goal | | from |\n| --- | ---: | ---: | ---: | --- | --- |\n")
	for _, x := range rows {
		conc := "–"
		if x.conc > 0 {
			conc = fmt.Sprint(x.conc)
		}
		v := ""
		if x.goal != "–" {
			v = verdict(x.met)
		}
		p("| %s | %s | %s | %s | %s | %s |\n", x.what, conc, x.measured, x.goal, v, x.detail)
	}
}
