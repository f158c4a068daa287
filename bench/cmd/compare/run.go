package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/toolsvc/toolsvc/bench/baselines"
	"github.com/toolsvc/toolsvc/bench/internal/drivers"
	"github.com/toolsvc/toolsvc/bench/internal/load"
	"github.com/toolsvc/toolsvc/bench/internal/toolsvc"
)

// results is everything a run measured; it is written as JSON and
// rendered into the report.
type results struct {
	StartedAt time.Time     `json:"startedAt"`
	Elapsed   string        `json:"elapsed"`
	Machine   machine       `json:"machine"`
	Command   string        `json:"command"`
	Sweeps    []*load.Sweep `json:"sweeps"`
	Ratios    []ratio       `json:"ratios"`
	Search    []*load.Sweep `json:"searchScale"`
	Knowledge []*load.Sweep `json:"knowledgeScale"`
	ToolsList []*load.Sweep `json:"toolsListScale"`
	// ToolsListBytes are the sizes of the first tools/list page, full, default
	// and compacted.
	ToolsListBytes []listBytes `json:"toolsListBytes,omitempty"`
	Profile        string      `json:"profile,omitempty"`
	Micro          string      `json:"microBenchmarks,omitempty"`
	// Upstream is the table of the upstream hop: a tool of the
	// example gRPC upstream through toolsvc's chain beside the same
	// upstream called directly.
	Upstream string `json:"upstreamHop,omitempty"`
	// UpstreamHops are the hop's levels with a target, machine-readable.
	UpstreamHops []hopRow `json:"upstreamHops,omitempty"`
	// Writes are the write rows (writes.go).
	Writes []writeRow `json:"writes,omitempty"`
	// Carried are the sections of the previous report measured by
	// commands of their own (marked "measured apart"), kept unchanged.
	Carried string         `json:"-"`
	Idle    *idleFootprint `json:"idle,omitempty"`
	// ServerLog counts the toolsvc log lines of the transport sweeps by
	// level, and the audit records the server reported dropped.
	ServerLog logCounts `json:"serverLog"`
	Notes     []string  `json:"notes"`
}

func run(ctx context.Context, cfg config, log *slog.Logger) error {
	start := time.Now()
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	repo, err := toolsvc.FindRepo(wd)
	if err != nil {
		return err
	}
	if cfg.render != "" {
		return render(repo, cfg)
	}
	tmp, err := os.MkdirTemp("", "toolsvc-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	log.Info("building toolsvc", "repo", repo)
	bin, err := toolsvc.Build(ctx, repo, tmp)
	if err != nil {
		return err
	}
	keys, err := toolsvc.WriteKeys(tmp, baselines.SyncStatusTenant, cfg.keys)
	if err != nil {
		return err
	}
	r := &results{StartedAt: start.UTC(), Machine: describeMachine(), Command: "make bench"}
	m := &measurer{cfg: cfg, log: log, tmp: tmp, bin: bin, repo: repo, keys: keys}
	if cfg.only == onlyWrites {
		return m.onlyWrites(ctx, start)
	}

	if r.Idle, err = m.idle(ctx); err != nil {
		return err
	}
	if err := m.baselines(ctx, r); err != nil {
		return err
	}
	if err := m.toolsvcTransports(ctx, r); err != nil {
		return err
	}
	r.Ratios = ratios(r.Sweeps, cfg.concurrency)
	if r.Writes, err = m.writeRows(ctx); err != nil {
		return err
	}
	r.ServerLog = countLog(filepath.Join(tmp, "toolsvc.log"))
	if !cfg.skipScale {
		if err := m.searchScale(ctx, r); err != nil {
			return err
		}
		if err := m.knowledgeScale(ctx, r); err != nil {
			return err
		}
		if err := m.toolsListScale(ctx, r); err != nil {
			return err
		}
	}
	if cfg.micro {
		if r.Micro, err = microBenchmarks(ctx, repo); err != nil {
			log.Warn("micro-benchmarks failed", "error", err)
			r.Notes = append(r.Notes, "micro-benchmarks failed: "+err.Error())
		}
	}
	if cfg.upstream {
		if r.Upstream, r.UpstreamHops, err = upstreamHop(ctx, repo, tmp, cfg.duration); err != nil {
			log.Warn("upstream hop failed", "error", err)
			r.Notes = append(r.Notes, "upstream hop failed: "+err.Error())
		}
	}
	if cfg.profile {
		prof, err := profileChain(ctx, repo, tmp)
		if err != nil {
			log.Warn("profile failed", "error", err)
			r.Notes = append(r.Notes, "CPU profile failed: "+err.Error())
		}
		r.Profile = prof
	}
	r.Elapsed = time.Since(start).Round(time.Second).String()
	out := inRepo(repo, cfg.outDir)
	if err := writeFile(filepath.Join(out, "results.json"), func(w io.Writer) error { return load.WriteJSON(w, r) }); err != nil {
		return err
	}
	all := append(append(append([]*load.Sweep{}, r.Sweeps...), r.Search...), append(r.Knowledge, r.ToolsList...)...)
	if err := writeFile(filepath.Join(out, "results.md"), func(w io.Writer) error { return load.WriteMarkdown(w, all) }); err != nil {
		return err
	}
	if cfg.doc != "" {
		r.Carried = carriedSections(inRepo(repo, cfg.doc))
		if err := writeFile(inRepo(repo, cfg.doc), func(w io.Writer) error { return writeReport(w, r, cfg) }); err != nil {
			return err
		}
	}
	log.Info("done", "elapsed", r.Elapsed, "doc", cfg.doc)
	return ctx.Err()
}

// render writes the report from an earlier run's results.json.
func render(repo string, cfg config) error {
	b, err := os.ReadFile(cfg.render)
	if err != nil {
		return err
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", cfg.render, err)
	}
	if cfg.doc == "" {
		return writeReport(os.Stdout, &r, cfg)
	}
	r.Carried = carriedSections(inRepo(repo, cfg.doc))
	return writeFile(inRepo(repo, cfg.doc), func(w io.Writer) error { return writeReport(w, &r, cfg) })
}

type measurer struct {
	cfg       config
	log       *slog.Logger
	tmp       string
	bin, repo string
	keys      toolsvc.Keys
}

func (m *measurer) plan(label string, pid int, levels []int, d time.Duration) load.Plan {
	return load.Plan{Concurrency: levels, Duration: d, Warmup: m.cfg.warmup, PID: pid, Label: label}
}

// scalePlan is the shorter plan of the data-scale points (concurrency 1
// and 8), which only need the shape of the curve.
func (m *measurer) scalePlan(label string, pid int) load.Plan {
	return load.Plan{Concurrency: []int{1, 8}, Duration: m.cfg.scaleDuration, Warmup: m.cfg.warmup / 2, PID: pid, Label: label}
}

func (m *measurer) sweep(ctx context.Context, name, transport, tool string, target load.Target, plan load.Plan, args string) (*load.Sweep, error) {
	m.log.Info("measuring", "series", name, "concurrency", plan.Concurrency)
	points, err := load.Run(ctx, target, plan)
	s := &load.Sweep{Name: name, Transport: transport, Tool: tool, Arguments: args, Points: points, SLO: m.cfg.slo}
	s.Analyze()
	return s, err
}

// pairedKinds are the baselines measured interleaved with a toolsvc
// transport (load.RunInterleaved) rather than on their own: the baselines
// of the rows that carry a target, and mark3labs' same-work server beside
// toolsvc's MCP. Measured minutes apart, a ratio moved by ±15% between
// runs with the machine's speed; taking turns, both sides see the same
// machine.
var pairedKinds = map[string][]string{
	toolsvc.GRPC:         {baselines.KindGRPCSyncStatus},
	toolsvc.REST:         {baselines.KindGatewaySyncStatus},
	toolsvc.MCPStateful:  {baselines.KindMark3Stateful, baselines.KindMark3SyncStatus},
	toolsvc.MCPStateless: {baselines.KindMark3Stateless},
	toolsvc.MCP2026:      {baselines.KindMark3SyncStatusModern, baselines.KindMark3Modern},
}

// interleavedRounds is how many turns each side of a pair takes per level.
const interleavedRounds = 3

// baselines measures every bare framework not in pairedKinds, each in its
// own process (the net/http floor is measured with the cached read).
func (m *measurer) baselines(ctx context.Context, r *results) error {
	for _, kind := range baselines.Kinds {
		if !m.measures(transportOf(kind)) || slices.Contains(pairedKinds[transportOf(kind)], kind) || kind == baselines.KindHTTPFloor {
			continue
		}
		p, err := startBaseline(kind, m.knowledgeDir())
		if err != nil {
			return err
		}
		target, closeTarget, err := baselineTarget(kind, p.addr, maxOf(m.cfg.concurrency), m.keys.Values)
		if err != nil {
			p.stop()
			return err
		}
		s, err := m.sweep(ctx, "bare "+kind, transportOf(kind), baselineTool(kind), target, m.plan(kind, p.cmd.Process.Pid, m.cfg.concurrency, m.cfg.duration), "")
		closeTarget()
		p.stop()
		if err != nil {
			return err
		}
		r.Sweeps = append(r.Sweeps, s)
	}
	return nil
}

// baselineTool is what a baseline serves: the benchmarked tool for the
// same-work baseline, an echo for every other.
func baselineTool(kind string) string {
	if kind == baselines.KindGRPCSyncStatus || kind == baselines.KindGatewaySyncStatus || kind == baselines.KindMark3SyncStatus || kind == baselines.KindMark3SyncStatusModern {
		return benchTool
	}
	return "echo"
}

// measures reports whether the run sweeps transport (--transports).
func (m *measurer) measures(transport string) bool {
	return len(m.cfg.transports) == 0 || slices.Contains(m.cfg.transports, transport)
}

func transportOf(kind string) string {
	switch kind {
	case baselines.KindGRPC, baselines.KindGRPCSyncStatus:
		return toolsvc.GRPC
	case baselines.KindGatewayInProcess, baselines.KindGatewayLoopback, baselines.KindGatewaySyncStatus:
		return toolsvc.REST
	case baselines.KindGoSDKStateless, baselines.KindMark3Stateless:
		return toolsvc.MCPStateless
	case baselines.KindMark3Modern, baselines.KindMark3SyncStatusModern, baselines.KindHTTPFloor:
		return toolsvc.MCP2026
	}
	return toolsvc.MCPStateful
}

// baselineTarget builds the load target of a baseline. The same-work
// baseline gets the requests and API keys toolsvc gets (it ignores the
// keys, but parses the same headers); the echo baselines get the echo.
func baselineTarget(kind, addr string, concurrency int, keys []string) (load.Target, func(), error) {
	switch transportOf(kind) {
	case toolsvc.GRPC:
		if kind == baselines.KindGRPCSyncStatus {
			tool, err := toolsvc.Resolve(benchTool)
			if err != nil {
				return nil, nil, err
			}
			return tool.Target(toolsvc.GRPC, toolsvc.Endpoint{GRPCAddr: addr, Keys: keys}, nil, concurrency)
		}
		conn, err := dialGRPC(addr)
		if err != nil {
			return nil, nil, err
		}
		return drivers.NewGRPC(conn, baselines.EchoMethod, []proto.Message{wrapperspb.String(baselines.EchoMessage)},
			(&wrapperspb.StringValue{}).ProtoReflect().Type(), nil), func() { _ = conn.Close() }, nil
	case toolsvc.REST:
		if kind == baselines.KindGatewaySyncStatus {
			tool, err := toolsvc.Resolve(benchTool)
			if err != nil {
				return nil, nil, err
			}
			return tool.Target(toolsvc.REST, toolsvc.Endpoint{HTTPBase: "http://" + addr, Keys: keys}, nil, concurrency)
		}
		client := drivers.NewHTTPClient(concurrency)
		body, _ := json.Marshal(baselines.EchoMessage)
		d, err := drivers.NewREST(client, http.MethodPost, "http://"+addr+baselines.GatewayPath, [][]byte{body}, nil)
		return d, client.CloseIdleConnections, err
	}
	if kind == baselines.KindMark3SyncStatus || kind == baselines.KindMark3SyncStatusModern {
		tool, err := toolsvc.Resolve(benchTool)
		if err != nil {
			return nil, nil, err
		}
		return tool.Target(transportOf(kind), toolsvc.Endpoint{HTTPBase: "http://" + addr, Keys: keys}, nil, concurrency)
	}
	client := drivers.NewHTTPClient(concurrency)
	args, _ := json.Marshal(baselines.EchoArgs{Text: baselines.EchoMessage})
	if kind == baselines.KindMark3Modern || kind == baselines.KindHTTPFloor {
		d, err := drivers.NewMCPModern(client, "http://"+addr+baselines.MCPPath, baselines.EchoTool, []json.RawMessage{args}, nil)
		return d, client.CloseIdleConnections, err
	}
	d, err := drivers.NewMCP(client, "http://"+addr+baselines.MCPPath, baselines.EchoTool, []json.RawMessage{args}, nil, transportOf(kind) == toolsvc.MCPStateful)
	return d, client.CloseIdleConnections, err
}

// benchTool is the real tool the transports are measured with: a fast
// query through the whole chain (auth, policy, rate limit, validation,
// audit, metrics, logs) that reads the store.
const benchTool = "get-sync-status"

// knowledgeDir is the knowledge directory toolsvc serves in the transport
// runs, and the same-work baselines load beside it: the example knowledge.
func (m *measurer) knowledgeDir() string { return filepath.Join(m.repo, "examples", "knowledge") }

func (m *measurer) startToolsvc(ctx context.Context, db, knowledge string, extra ...string) (*toolsvc.Process, error) {
	logf, err := os.OpenFile(filepath.Join(m.tmp, "toolsvc.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	// The child gets its own copy of the descriptor; ours closes at once.
	defer logf.Close()
	if knowledge == "" {
		knowledge = m.knowledgeDir()
	}
	return toolsvc.Start(ctx, toolsvc.Options{Binary: m.bin, DB: db, KnowledgeDir: knowledge, AuthFile: m.keys.File, Extra: extra, Log: logf})
}

// toolsvcTransports measures toolsvc over gRPC, REST and MCP with
// sessions, then restarts it stateless for MCP without sessions.
func (m *measurer) toolsvcTransports(ctx context.Context, r *results) error {
	tool, err := toolsvc.Resolve(benchTool)
	if err != nil {
		return err
	}
	// The same seed as the same-work baseline's store, so both read a
	// sync run and answer healthy.
	db := filepath.Join(m.tmp, "transports.db")
	st, err := baselines.OpenSyncStatusStore(ctx, db)
	if err != nil {
		return fmt.Errorf("seed %s: %w", db, err)
	}
	if err := st.Close(); err != nil {
		return err
	}
	for _, mode := range []struct {
		transports []string
		extra      []string
	}{
		// The 2026-07-28 path has no sessions either way: it is measured
		// on the default server, beside the 2025 paths.
		{transports: []string{toolsvc.GRPC, toolsvc.REST, toolsvc.MCPStateful, toolsvc.MCP2026}},
		{transports: []string{toolsvc.MCPStateless}, extra: []string{"--mcp-stateless"}},
	} {
		mode.transports = slices.DeleteFunc(mode.transports, func(tr string) bool { return !m.measures(tr) })
		if len(mode.transports) == 0 {
			continue
		}
		p, err := m.startToolsvc(ctx, db, "", mode.extra...)
		if err != nil {
			return err
		}
		for _, tr := range mode.transports {
			ep := toolsvc.Endpoint{GRPCAddr: p.GRPCAddr, HTTPBase: "http://" + p.HTTPAddr, Keys: m.keys.Values}
			target, closeTarget, err := tool.Target(tr, ep, nil, maxOf(m.cfg.concurrency))
			if err != nil {
				p.Stop()
				return err
			}
			sweeps, err := m.interleaved(ctx, tr, target, p.PID())
			closeTarget()
			if err != nil {
				p.Stop()
				return err
			}
			r.Sweeps = append(r.Sweeps, sweeps...)
		}
		p.Stop()
	}
	if m.measures(toolsvc.MCP2026) {
		return m.cachedRead(ctx, r, db)
	}
	return nil
}

// The cached read: show-knowledge of the example knowledge's company-wide
// item (published to every tenant, --knowledge-company-wide) over MCP
// 2026-07-28, whose result the chain serves from its cache after the
// first call of each principal, beside the net/http floor
// (baselines.KindHTTPFloor), taking turns. The load rotates over
// cachedReadKeys of the run's API keys.
const (
	cachedReadTool   = "show-knowledge"
	cachedReadArgs   = `{"id":"pol-012-no-plaintext-secrets"}`
	cachedReadKeys   = 512
	cachedReadSeries = "toolsvc mcp-2026 cached " + cachedReadTool
	floorSeries      = "bare " + baselines.KindHTTPFloor
)

// cachedRead measures the cached read on a server of its own over db.
func (m *measurer) cachedRead(ctx context.Context, r *results, db string) error {
	tool, err := toolsvc.Resolve(cachedReadTool)
	if err != nil {
		return err
	}
	p, err := m.startToolsvc(ctx, db, "", "--knowledge-company-wide")
	if err != nil {
		return err
	}
	defer p.Stop()
	keys := m.keys.Values[:min(cachedReadKeys, len(m.keys.Values))]
	ep := toolsvc.Endpoint{HTTPBase: "http://" + p.HTTPAddr, Keys: keys}
	target, closeTarget, err := tool.Target(toolsvc.MCP2026, ep, []json.RawMessage{json.RawMessage(cachedReadArgs)}, maxOf(m.cfg.concurrency))
	if err != nil {
		return err
	}
	defer closeTarget()
	ts := series{name: cachedReadSeries, transport: toolsvc.MCP2026, tool: cachedReadTool, args: cachedReadArgs}
	sweeps, err := m.takingTurns(ctx, ts, target, p.PID(), []string{baselines.KindHTTPFloor})
	r.Sweeps = append(r.Sweeps, sweeps...)
	return err
}

// interleaved measures toolsvc over tr (target, served by pid) taking
// turns with the baselines pairedKinds names for tr, each started in its
// own process for the occasion. It returns toolsvc's sweep, then theirs.
func (m *measurer) interleaved(ctx context.Context, tr string, target load.Target, pid int) ([]*load.Sweep, error) {
	return m.takingTurns(ctx, series{name: "toolsvc " + tr, transport: tr, tool: benchTool, args: "{}"}, target, pid, pairedKinds[tr])
}

// series names what a toolsvc sweep measures.
type series struct{ name, transport, tool, args string }

// takingTurns measures toolsvc (target, served by pid) taking turns with
// the baselines kinds, each started in its own process for the occasion.
// It returns toolsvc's sweep, then theirs.
func (m *measurer) takingTurns(ctx context.Context, ts series, target load.Target, pid int, kinds []string) ([]*load.Sweep, error) {
	names := []string{ts.name}
	transports := []string{ts.transport}
	tools := []string{ts.tool}
	args := []string{ts.args}
	targets := []load.Target{target}
	plans := []load.Plan{m.plan(ts.transport, pid, m.cfg.concurrency, m.cfg.duration)}
	var cleanups []func()
	defer func() {
		for _, c := range cleanups {
			c()
		}
	}()
	for _, kind := range kinds {
		b, err := startBaseline(kind, m.knowledgeDir())
		if err != nil {
			return nil, err
		}
		cleanups = append(cleanups, b.stop)
		bt, closeTarget, err := baselineTarget(kind, b.addr, maxOf(m.cfg.concurrency), m.keys.Values)
		if err != nil {
			return nil, err
		}
		cleanups = append(cleanups, closeTarget)
		names = append(names, "bare "+kind)
		transports = append(transports, transportOf(kind))
		tools = append(tools, baselineTool(kind))
		args = append(args, "")
		targets = append(targets, bt)
		plans = append(plans, m.plan(kind, b.cmd.Process.Pid, m.cfg.concurrency, m.cfg.duration))
	}
	m.log.Info("measuring, taking turns", "series", names, "concurrency", m.cfg.concurrency, "rounds", interleavedRounds)
	points, err := load.RunInterleaved(ctx, targets, plans, interleavedRounds)
	var out []*load.Sweep
	for i, ps := range points {
		s := &load.Sweep{Name: names[i], Transport: transports[i], Tool: tools[i], Arguments: args[i], Points: ps, SLO: m.cfg.slo}
		s.Analyze()
		out = append(out, s)
	}
	return out, err
}

// searchScale seeds a SQLite store (and a scratch PostgreSQL database)
// incrementally to each size and measures search-memories over gRPC at
// concurrency 1 and 8 with thousands of distinct queries.
func (m *measurer) searchScale(ctx context.Context, r *results) error {
	tool, err := toolsvc.Resolve("search-memories")
	if err != nil {
		return err
	}
	args := searchArgs(20000)
	measure := func(backend, dsn string, sizes []int) error {
		seeded := 0
		for _, n := range sizes {
			t0 := time.Now()
			if err := seedMemories(ctx, dsn, m.keys.Tenant, n-seeded, seeded); err != nil {
				return err
			}
			m.log.Info("seeded", "backend", backend, "memories", n, "took", time.Since(t0).Round(time.Millisecond))
			seeded = n
			p, err := m.startToolsvc(ctx, dsn, "")
			if err != nil {
				return err
			}
			ep := toolsvc.Endpoint{GRPCAddr: p.GRPCAddr, Keys: m.keys.Values}
			target, closeTarget, err := tool.Target(toolsvc.GRPC, ep, args, 8)
			if err != nil {
				p.Stop()
				return err
			}
			s, err := m.sweep(ctx, fmt.Sprintf("search %s %dk", backend, n/1000), toolsvc.GRPC, "search-memories", target,
				m.scalePlan("search", p.PID()), string(args[0]))
			closeTarget()
			p.Stop()
			if err != nil {
				return err
			}
			r.Search = append(r.Search, s)
		}
		return nil
	}
	if err := measure("sqlite", filepath.Join(m.tmp, "search.db"), m.cfg.searchSizes); err != nil {
		return err
	}
	if len(m.cfg.pgSizes) == 0 {
		return nil
	}
	dsn, drop, err := scratchDatabase(ctx, m.cfg.postgres)
	if err != nil {
		m.log.Warn("PostgreSQL unavailable; skipping its search scale", "error", err)
		r.Notes = append(r.Notes, "PostgreSQL search scale skipped: "+err.Error())
		return nil
	}
	defer drop()
	return measure("postgres", dsn, m.cfg.pgSizes)
}

// scratchDatabase creates a fresh database on the server of dsn and
// returns its DSN and a function dropping it.
func scratchDatabase(ctx context.Context, dsn string) (string, func(), error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", nil, err
	}
	if err := drivers.CheckLoopback(fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)); err != nil {
		return "", nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return "", nil, err
	}
	name := fmt.Sprintf("toolsvc_bench_%d", time.Now().UnixNano())
	if _, err := conn.Exec(cctx, "CREATE DATABASE "+name); err != nil {
		_ = conn.Close(ctx)
		return "", nil, err
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = conn.Exec(dctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		_ = conn.Close(dctx)
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name), drop, nil
}

// knowledgeScale measures check-knowledge against knowledge dirs of
// growing size (10 constraints per file).
func (m *measurer) knowledgeScale(ctx context.Context, r *results) error {
	tool, err := toolsvc.Resolve("check-knowledge")
	if err != nil {
		return err
	}
	args := []json.RawMessage{checkArgs()}
	for _, files := range m.cfg.knowledgeSizes {
		dir := filepath.Join(m.tmp, fmt.Sprintf("knowledge-%d", files))
		if err := writeKnowledge(dir, files, 10); err != nil {
			return err
		}
		p, err := m.startToolsvc(ctx, filepath.Join(m.tmp, fmt.Sprintf("knowledge-%d.db", files)), dir)
		if err != nil {
			return err
		}
		ep := toolsvc.Endpoint{GRPCAddr: p.GRPCAddr, Keys: m.keys.Values}
		target, closeTarget, err := tool.Target(toolsvc.GRPC, ep, args, 8)
		if err != nil {
			p.Stop()
			return err
		}
		s, err := m.sweep(ctx, fmt.Sprintf("check-knowledge %d constraints / %d files", files*10, files), toolsvc.GRPC, "check-knowledge",
			target, m.scalePlan("check", p.PID()), "")
		closeTarget()
		p.Stop()
		if err != nil {
			return err
		}
		r.Knowledge = append(r.Knowledge, s)
	}
	return nil
}

func maxOf(v []int) int {
	m := 1
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// inRepo resolves a relative path against the repository root.
func inRepo(repo, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(repo, p)
}

// logCounts summarizes a toolsvc JSON log.
type logCounts struct {
	Lines        int `json:"lines"`
	Warnings     int `json:"warnings"`
	Errors       int `json:"errors"`
	AuditDropped int `json:"auditDropped"`
}

func countLog(path string) logCounts {
	var c logCounts
	b, err := os.ReadFile(path)
	if err != nil {
		return c
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		c.Lines++
		switch {
		case bytes.Contains(l, []byte(`"level":"WARN"`)):
			c.Warnings++
		case bytes.Contains(l, []byte(`"level":"ERROR"`)):
			c.Errors++
		}
		if bytes.Contains(l, []byte("audit queue full")) {
			c.AuditDropped++
		}
	}
	return c
}
