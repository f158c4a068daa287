package main

import (
	"fmt"
	"strings"
	"text/template"
)

// analysis states, from the measurements alone, which targets were met
// and which were missed; the reasons are in the profile section and in
// the hand-written notes the report ends with.
func analysis(r *results) string {
	var b strings.Builder
	for _, x := range r.Ratios {
		if x.Target == 0 {
			continue
		}
		verdict := "met"
		if !x.Met {
			verdict = "MISSED"
		}
		fmt.Fprintf(&b, "- %s vs %s at concurrency %d: %.2f× (target ≥ %.1f×): %s.\n", x.Toolsvc, x.Baseline, x.Concurrency, x.Ratio, x.Target, verdict)
	}
	for _, s := range r.Search {
		if s.Name != "search sqlite 100k" {
			continue
		}
		if p, ok := s.At(1); ok {
			verdict := "met"
			if p.P99Ms > 10 || p.Errors > 0 {
				verdict = "MISSED"
			}
			fmt.Fprintf(&b, "- search-memories at 100k memories on SQLite, concurrency 1: p50 %.2f ms, p99 %.2f ms (target p99 ≤ 10 ms): %s.\n", p.P50Ms, p.P99Ms, verdict)
		}
	}
	for _, s := range r.ToolsList {
		if s.Name != "tools/list 1000 tools" {
			continue
		}
		if p, ok := s.At(1); ok {
			verdict := "met"
			if p.P99Ms > 2 || p.Errors > 0 {
				verdict = "MISSED"
			}
			fmt.Fprintf(&b, "- tools/list with 1,000 tools (cached), concurrency 1: p50 %.2f ms, p99 %.2f ms (target p99 ≤ 2 ms): %s.\n", p.P50Ms, p.P99Ms, verdict)
		}
	}
	if l := r.ServerLog; l.Lines > 0 {
		fmt.Fprintf(&b, "- toolsvc's log during the transport sweeps: %d lines, %d warnings, %d errors, %d audit records dropped (\"audit queue full\").\n",
			l.Lines, l.Warnings, l.Errors, l.AuditDropped)
		if l.AuditDropped > 0 {
			b.WriteString("  **Audit records were dropped under load**: a correctness problem for an append-only audit; the audit writer needs to keep up (larger batches) or apply back-pressure.\n")
		}
	}
	if r.Profile != "" {
		b.WriteString("- Shares of the chain benchmark's CPU (cumulative, from the profile above):")
		for _, f := range profiled {
			fmt.Fprintf(&b, " %s %s;", f.label, cumShare(r.Profile, f.fn))
		}
		b.WriteString("\n")
	}
	b.WriteString(renderNotes(r))
	return b.String()
}

// profiled are the functions whose cumulative CPU share the analysis
// quotes from the profile.
var profiled = []struct{ label, fn string }{
	{"tool's store read (sqlite.(*Store).SyncStats)", "sqlite.(*Store).SyncStats"},
	{"SQLite preparing SQL (_sqlite3Prepare)", "_sqlite3Prepare"},
	{"batched audit writes (sqlite.(*Store).AppendAudits)", "sqlite.(*Store).AppendAudits"},
	{"protovalidate (input and result)", "protovalidate.(*validator).Validate"},
	{"goroutine stack growth (runtime.newstack)", "runtime.newstack"},
}

// cumShare returns the cum% column of the first `pprof -top -cum` line
// naming fn, or "below the top of the profile".
func cumShare(profile, fn string) string {
	for _, l := range strings.Split(profile, "\n") {
		f := strings.Fields(l)
		if len(f) == 6 && strings.Contains(f[5], fn) {
			return f[4]
		}
	}
	return "below the top of the profile"
}

// notes is the reading of the profile and of the sweeps, kept with the
// generator so that `make bench` rewrites the whole report. It is a
// template: every figure it quotes is taken from the run it is printed
// with (ratio, ratios, cpu, share, micro), so the text cannot go on quoting
// an older run's numbers; the causes it names must still be re-read when
// the figures move.
const notes = `
### Why, and what it needs

- **gRPC and REST against the same work**: the target rows compare toolsvc with bare servers
  running the same get-sync-status implementation on the same kind of seeded SQLite store
  (bare grpc-go-sync-status; for REST the generated sync gateway calling it in process), so the ratio
  is the cost of the chain itself: API-key auth, policy, rate limit, protovalidate on the input and on
  the result's hints, the audit record, metrics, one JSON log line per call (the start line is at
  debug), the trace id and result metadata. In this run gRPC is at {{ratios "grpc" "bare grpc-go-sync-status"}}
  of its same-work server and REST at {{ratios "rest" "bare gateway-inproc-sync-status"}}; toolsvc's gRPC server
  spends {{cpu "toolsvc grpc" 8}} µs of CPU per call at concurrency 8 against the bare server's
  {{cpu "bare grpc-go-sync-status" 8}} µs. BenchmarkGRPCSyncStatus (micro-benchmarks above) measures the same
  pair over bufconn with the process CPU per call: {{micro "BenchmarkGRPCSyncStatus/chain-c64" "cpu-µs/op"}} µs and
  {{micro "BenchmarkGRPCSyncStatus/chain-c64" "allocs/op"}} allocations per call through the chain against
  {{micro "BenchmarkGRPCSyncStatus/bare-c64" "cpu-µs/op"}} µs and {{micro "BenchmarkGRPCSyncStatus/bare-c64" "allocs/op"}} on the bare server at 64 callers.
  What was cut to get here: hot SQL prepared once per connection
  (internal/store/sqlite/stmtcache.go) and SyncStats in one statement; read-only calls' audit records
  linger without waking the writer, then are written with multi-row inserts, one commit per batch; a
  pool of gRPC stream workers (grpc.NumStreamWorkers), so calls stop paying for goroutine stack growth
  through the chain and SQLite; headers copied once per call; the SQLite pools hand out connections
  first come, first served (internal/store/sqlite/gate.go) instead of through database/sql's random
  hand-off; the audit table lost its index on subject (migration 0004: with a principal per caller,
  every event dirtied a page of its own for the WAL), and result hints are proven valid by a direct
  check of hints.proto's rules (internal/contract/hints.Valid) before protovalidate
  (BenchmarkValidate: {{micro "BenchmarkValidate" "ns/op"}} ns) is asked, which now only decides what the check
  cannot prove and names the violation. The bare same-work servers use the same store package, so
  they get the same store code. What remains per call (profile above): the tool's read
  ({{share "sqlite.(*Store).SyncStats"}} of the chain benchmark's CPU), slowed by the audit writes into the same
  database ({{share "sqlite.(*Store).AppendAudits"}}); protovalidate ({{share "protovalidate.(*validator).Validate"}}); the log
  line and metrics; allocations and the GC they cost. REST gains on its baseline at low concurrency
  because toolsvc's gateway calls the chain over the in-process channel (no HTTP/2 framing), while the
  bare gateway talks to its server over bufconn.
- **MCP against mark3labs' echo (the MCP target)**: {{ratios "mcp-stateless" "bare mark3labs-stateless"}} on the
  stateless path in this run, and not for the bridge: the bridge's own work is a small share of a
  tools/call (internal/mcpbridge BenchmarkServe*; tools/list pages and results are encoded once). No
  server that runs this tool can reach 1.0× of an echo: mark3labs itself, serving the same
  get-sync-status with no chain at all (bare mark3labs-stateful-sync-status, measured taking turns with
  toolsvc), spends {{cpu "bare mark3labs-stateful-sync-status" 8}} µs of CPU per call at concurrency 8 against its own
  echo's {{cpu "bare mark3labs-stateful" 8}} µs. Adding the tool more than doubles the cost of a call, so the tool
  alone costs more than the whole echo call, whatever the transport and chain around it cost
  (docs/BENCHMARKS-mcp.md has the profile of where a call's time goes). Beside that same-work server,
  toolsvc's MCP with the whole chain is at {{ratios "mcp-stateful" "bare mark3labs-stateful-sync-status"}}. Reaching 1.0×
  of an echo would need the tool's result served without running the tool (the result cache, which
  this tool's contract does not allow), so the target is restated as a same-work ratio.
- **MCP revision 2026-07-28 (its targets)**: toolsvc's 2026 path (no session, \_meta and the
  Mcp-Method/Mcp-Name headers checked on every call, the whole chain) is at
  {{ratios "mcp-2026" "bare mark3labs-sync-status-2026"}} of mark3labs serving the same get-sync-status
  in its 2026 mode (target ≥ 1.0×), {{ratios "mcp-2026" "bare mark3labs-2026"}} of mark3labs' 2026 echo
  (the stretch target), and {{ratios "mcp-2026" "toolsvc mcp-stateless"}} of toolsvc's own 2025 stateless
  path (target: no slower). Both mark3labs servers are driven by the same 2026 driver as toolsvc and
  measured taking turns with it. docs/BENCHMARKS-mcp.md profiles a 2026 call.
- **search-memories**: a text search walks the full-text index newest first over the caller's own
  scopes only (a scope token in the index), stops after 1,000 matches (store.MatchedCap), ranks that
  window with BM25 in Go over its own statistics (FTS5's bm25() walks every posting of each term per
  query) and reads in full only the best candidates; search-memories asks only for memories that can
  reach its threshold (store.SearchQuery.MinMatch), memoises stems and settles near-duplicates by
  signature. Memories are numbered downwards (migration 0003), so newest first is FTS5's ascending
  order, which steps through postings about a third cheaper than its reverse iterators
  (BenchmarkSearchCommonWords). What a search still costs grows with its caller's matches up to
  store.MatchedCap and is flat beyond: see docs/RELIABILITY.md "Soak". PostgreSQL ranks the same
  window with the same BM25, from scoped term lists (migration 0008) that hold what ranking reads.
- **tools/list**: each permission set's visible tools map to pages rendered once to JSON and written
  around the JSON-RPC envelope, so a cached page costs a map lookup and a write whatever the number of
  tools; the benchmark client checks responses without decoding them (bench/internal/mcpcheck),
  since decoding a 100-tool page on the same two cores took longer than serving it.
`

// notMeasured stands in for a figure this run did not produce (a transport
// or a section skipped by a flag).
const notMeasured = "(not measured in this run)"

// renderNotes fills notes with r's figures.
func renderNotes(r *results) string {
	funcs := template.FuncMap{
		// ratio is toolsvc's ratio to baseline at concurrency c.
		"ratio": func(transport, baseline string, c int) string {
			for _, x := range r.Ratios {
				if x.Transport == transport && x.Baseline == baseline && x.Concurrency == c {
					return fmt.Sprintf("%.2f×", x.Ratio)
				}
			}
			return notMeasured
		},
		// ratios lists toolsvc's ratios to baseline at every concurrency.
		"ratios": func(transport, baseline string) string {
			var vs, cs []string
			for _, x := range r.Ratios {
				if x.Transport == transport && x.Baseline == baseline {
					vs = append(vs, fmt.Sprintf("%.2f×", x.Ratio))
					cs = append(cs, fmt.Sprint(x.Concurrency))
				}
			}
			if len(vs) == 0 {
				return notMeasured
			}
			return fmt.Sprintf("%s at concurrency %s", joinAnd(vs), joinAnd(cs))
		},
		// cpu is a series' server CPU per request (µs) at concurrency c.
		"cpu": func(series string, c int) string {
			for _, s := range r.Sweeps {
				if s.Name != series {
					continue
				}
				if p, ok := s.At(c); ok && p.ServerCPUPerRequestUs > 0 {
					return fmt.Sprintf("%.0f", p.ServerCPUPerRequestUs)
				}
			}
			return notMeasured
		},
		// share is a function's cumulative share of the chain profile.
		"share": func(fn string) string {
			if r.Profile == "" {
				return notMeasured
			}
			return cumShare(r.Profile, fn)
		},
		// micro is one column (by its unit) of a micro-benchmark line.
		"micro": func(bench, unit string) string {
			if v, ok := microValue(r.Micro, bench, unit); ok {
				return v
			}
			return notMeasured
		},
	}
	t := template.Must(template.New("notes").Funcs(funcs).Parse(notes))
	var b strings.Builder
	if err := t.Execute(&b, nil); err != nil {
		return notes // unreachable with the functions above; never lose the text
	}
	return b.String()
}

// microValue finds the line of `go test -bench` output for bench (the name
// before the -GOMAXPROCS suffix) and returns the value printed before unit.
func microValue(out, bench, unit string) (string, bool) {
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i]
		}
		if name != bench {
			continue
		}
		for i := 2; i < len(f); i++ {
			if f[i] == unit {
				return f[i-1], true
			}
		}
	}
	return "", false
}

// joinAnd joins "a", "b" and "c" as "a, b and c".
func joinAnd(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
