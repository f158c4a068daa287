// Command compare measures toolsvc beside the bare frameworks it is built
// on, in one run on one machine, and writes docs/BENCHMARKS.md:
//
//   - every baseline (bench/baselines) in its own process, and toolsvc
//     (built fresh, on free loopback ports, temporary SQLite store, full
//     chain, API keys) over gRPC, REST and MCP, swept over concurrency;
//   - toolsvc/baseline throughput ratios at each concurrency;
//   - data-scale curves: search-memories by store size (SQLite and
//     PostgreSQL) and check-knowledge by number of constraints.
//
// Every process it starts is stopped before it returns.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/bench/baselines"
	"github.com/toolsvc/toolsvc/bench/internal/load"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "baseline" {
		knowledgeDir := ""
		if len(os.Args) > 3 {
			knowledgeDir = os.Args[3]
		}
		os.Exit(serveBaseline(os.Args[2], knowledgeDir))
	}
	os.Exit(compare(os.Args[1:]))
}

// compare runs the measurements args ask for and returns the exit code:
// 2 for bad flags, 1 for a failed run.
func compare(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := parse(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		logger.Error("flags", "error", err)
		return 2
	}
	if err := run(ctx, cfg, logger); err != nil {
		logger.Error("compare failed", "error", err)
		return 1
	}
	return 0
}

// config is what a run measures.
type config struct {
	concurrency      []int
	duration, warmup time.Duration
	scaleDuration    time.Duration
	slo              load.SLO
	keys             int
	searchSizes      []int
	pgSizes          []int
	postgres         string
	knowledgeSizes   []int // number of files; each has 10 constraints
	toolsListSizes   []int
	outDir, doc      string
	profile          bool
	skipScale        bool
	micro            bool
	upstream         bool
	// transports limits the transport sweeps, baselines included, to
	// these transports; empty means all.
	transports []string
	// render, when set, is a results.json of an earlier run to write the
	// report from, without measuring anything (after the report's text
	// changed; the run's flags must have been the defaults).
	render string
	// only, when set, names the only rows to measure (onlyWrites).
	only string
}

func parse(args []string) (config, error) {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	var c config
	conc := fs.String("concurrency", "1,8,64", "concurrency levels of the transport sweeps")
	fs.DurationVar(&c.duration, "duration", 3*time.Second, "measurement time per level")
	fs.DurationVar(&c.warmup, "warmup", 500*time.Millisecond, "warm-up per level (halved for the data-scale points)")
	fs.DurationVar(&c.scaleDuration, "scale-duration", 2*time.Second, "measurement time per level of the data-scale points")
	p95 := fs.Duration("p95-slo", 20*time.Millisecond, "p95 objective for the recommended concurrency")
	p99 := fs.Duration("p99-slo", 50*time.Millisecond, "p99 objective for the recommended concurrency")
	fs.IntVar(&c.keys, "keys", 2048, "API keys (principals) the load rotates over, so per-principal rate limits admit it")
	sizes := fs.String("search-sizes", "10000,100000,1000000", "SQLite store sizes for search-memories")
	pgSizes := fs.String("pg-search-sizes", "10000,100000", "PostgreSQL store sizes for search-memories (empty: skip)")
	fs.StringVar(&c.postgres, "postgres", envOr("TOOLSVC_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL server (a scratch database is created on it and dropped)")
	ks := fs.String("knowledge-files", "10,30,100", "knowledge files (10 constraints each) for check-knowledge")
	tl := fs.String("tools-list-sizes", "10,100,1000", "synthetic registry sizes for tools/list")
	fs.StringVar(&c.outDir, "out", "bench/results", "directory for the JSON and Markdown results")
	fs.StringVar(&c.doc, "doc", "docs/BENCHMARKS.md", "Markdown report to (re)write; empty: none")
	fs.BoolVar(&c.profile, "profile", true, "take a CPU profile of the in-process chain benchmark for the report")
	fs.BoolVar(&c.skipScale, "skip-scale", false, "skip the data-scale benchmarks")
	fs.BoolVar(&c.micro, "micro", true, "run the hot-path micro-benchmarks for the report")
	fs.BoolVar(&c.upstream, "upstream", true, "measure the upstream hop (a tool of the example gRPC upstream through the chain beside the direct call)")
	fs.StringVar(&c.render, "render", "", "write --doc from this results.json of an earlier default run, measuring nothing")
	fs.StringVar(&c.only, "only", "", `measure only these rows: "writes" (the write rows, printed and written to <out>/writes.json; the report is not rewritten); empty: everything`)
	trs := fs.String("transports", "", "only these transports (grpc, rest, mcp-stateful, mcp-stateless, mcp-2026) and their baselines; empty: all")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.concurrency, err = ints(*conc); err != nil {
		return c, fmt.Errorf("--concurrency: %w", err)
	}
	if c.searchSizes, err = ints(*sizes); err != nil {
		return c, fmt.Errorf("--search-sizes: %w", err)
	}
	if c.pgSizes, err = ints(*pgSizes); err != nil {
		return c, fmt.Errorf("--pg-search-sizes: %w", err)
	}
	if c.knowledgeSizes, err = ints(*ks); err != nil {
		return c, fmt.Errorf("--knowledge-files: %w", err)
	}
	if c.toolsListSizes, err = ints(*tl); err != nil {
		return c, fmt.Errorf("--tools-list-sizes: %w", err)
	}
	for _, t := range strings.Split(*trs, ",") {
		if t = strings.TrimSpace(t); t != "" {
			c.transports = append(c.transports, t)
		}
	}
	if c.only != "" && c.only != onlyWrites {
		return c, fmt.Errorf("--only: %q is not a row set (want %q)", c.only, onlyWrites)
	}
	c.slo = load.SLO{P95Ms: float64(*p95) / 1e6, P99Ms: float64(*p99) / 1e6}
	return c, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func ints(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// serveBaseline is the child mode: run one baseline (the same-work ones on
// knowledgeDir, when not empty), print its address on stdout, and stop
// when stdin closes or on a signal.
func serveBaseline(kind, knowledgeDir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if n, ok := strings.CutPrefix(kind, toolsListKind); ok {
		return serveToolsListChild(ctx, n)
	}
	s, err := baselines.Start(ctx, kind, baselines.WithKnowledge(knowledgeDir))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	fmt.Println(s.Addr)
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
	select {
	case <-ctx.Done():
	case <-eof:
	}
	return 0
}

// baselineProcess runs a baseline in a child process of this binary, so
// that it has its own runtime and its CPU and RSS can be read from /proc.
type baselineProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
}

func startBaseline(kind, knowledgeDir string) (*baselineProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "baseline", kind, knowledgeDir) //nolint:gosec // this very binary
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &baselineProcess{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("baseline %s: %w", kind, err)
	}
	p.addr = strings.TrimSpace(line)
	return p, nil
}

func (p *baselineProcess) stop() {
	_ = p.stdin.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

func writeFile(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// serveToolsListChild is serveToolsList in child mode: it stops when stdin
// closes or on a signal.
func serveToolsListChild(ctx context.Context, n string) int {
	size, err := strconv.Atoi(n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	if err := serveToolsList(ctx, size); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
