// Command toolsvc-bench drives a running toolsvc (loopback only) with one
// tool over gRPC, REST or MCP Streamable HTTP at a list of concurrency
// levels, and reports throughput, latency percentiles, errors, the server's
// CPU per request and peak RSS (with --pid), the knee and the recommended
// concurrency under SLOs, as JSON and Markdown.
//
//	toolsvc-bench --transport grpc,rest,mcp-stateful --tool get-sync-status \
//	    --concurrency 1,8,64 --duration 5s --warmup 1s --pid $(pgrep -n toolsvc) \
//	    --p95-slo 20ms --p99-slo 50ms --out bench-results/sync
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/bench/internal/load"
	"github.com/toolsvc/toolsvc/bench/internal/toolsvc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolsvc-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	transports := fs.String("transport", "grpc", "comma-separated: grpc, rest, mcp-stateful, mcp-stateless, mcp-2026")
	grpcAddr := fs.String("grpc-addr", "127.0.0.1:9090", "toolsvc gRPC address (loopback only)")
	httpBase := fs.String("http", "http://127.0.0.1:8080", "toolsvc HTTP base URL (loopback only)")
	tool := fs.String("tool", "get-sync-status", "tool to call")
	argsJSON := fs.String("args", "{}", "tool arguments as a JSON object")
	argsFile := fs.String("args-file", "", "file of JSON objects, one per line, sent in rotation (overrides --args)")
	keysFile := fs.String("api-keys-file", "", "file of API keys, one per line, sent in rotation (default: none, development mode)")
	conc := fs.String("concurrency", "1,8,64", "comma-separated concurrency levels")
	duration := fs.Duration("duration", 5*time.Second, "measurement time per level")
	warmup := fs.Duration("warmup", time.Second, "warm-up time per level (unrecorded)")
	timeout := fs.Duration("timeout", 5*time.Second, "deadline of every call")
	maxReq := fs.Int64("max-requests", 5_000_000, "most calls per level")
	pid := fs.Int("pid", 0, "local toolsvc process id, for CPU per request and peak RSS from /proc")
	p95 := fs.Duration("p95-slo", 0, "p95 objective for the recommended concurrency (0: none)")
	p99 := fs.Duration("p99-slo", 0, "p99 objective for the recommended concurrency (0: none)")
	maxErr := fs.Float64("max-error-rate", 0, "largest error fraction a recommended point may have")
	out := fs.String("out", "", "write OUT.json and OUT.md (default: Markdown on stdout only)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	levels, err := parseInts(*conc)
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc-bench: --concurrency: %v\n", err)
		return 2
	}
	t, err := toolsvc.Resolve(*tool)
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc-bench: %v\n", err)
		return 2
	}
	callArgs, err := readArgs(*argsJSON, *argsFile)
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc-bench: %v\n", err)
		return 2
	}
	keys, err := readLines(*keysFile)
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc-bench: --api-keys-file: %v\n", err)
		return 2
	}
	ep := toolsvc.Endpoint{GRPCAddr: *grpcAddr, HTTPBase: *httpBase, Keys: keys}
	slo := load.SLO{P95Ms: ms(*p95), P99Ms: ms(*p99), MaxErrorRate: *maxErr}
	var progress io.Writer
	if isTerminal(stdout) {
		progress = stdout
	}
	var sweeps []*load.Sweep
	for _, tr := range strings.Split(*transports, ",") {
		tr = strings.TrimSpace(tr)
		target, closeTarget, err := t.Target(tr, ep, callArgs, slicesMax(levels))
		if err != nil {
			fmt.Fprintf(stderr, "toolsvc-bench: %s: %v\n", tr, err)
			return 2
		}
		points, err := load.Run(ctx, target, load.Plan{Concurrency: levels, Duration: *duration, Warmup: *warmup,
			Timeout: *timeout, MaxRequests: *maxReq, PID: *pid, Progress: progress, Label: tr})
		closeTarget()
		s := &load.Sweep{Name: "toolsvc " + tr, Transport: tr, Tool: *tool, Arguments: string(callArgs[0]), Points: points, SLO: slo}
		s.Analyze()
		sweeps = append(sweeps, s)
		if err != nil {
			fmt.Fprintf(stderr, "toolsvc-bench: %s: %v\n", tr, err)
			break
		}
	}
	if err := load.WriteMarkdown(stdout, sweeps); err != nil {
		return 1
	}
	if *out != "" {
		if err := writeOut(*out, sweeps); err != nil {
			fmt.Fprintf(stderr, "toolsvc-bench: %v\n", err)
			return 1
		}
	}
	if ctx.Err() != nil {
		return 130
	}
	return 0
}

func writeOut(prefix string, sweeps []*load.Sweep) error {
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		return err
	}
	jf, err := os.Create(prefix + ".json")
	if err != nil {
		return err
	}
	err = load.WriteJSON(jf, map[string]any{"generatedAt": time.Now().UTC(), "sweeps": sweeps})
	if cerr := jf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	mf, err := os.Create(prefix + ".md")
	if err != nil {
		return err
	}
	err = load.WriteMarkdown(mf, sweeps)
	if cerr := mf.Close(); err == nil {
		err = cerr
	}
	return err
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func readArgs(inline, file string) ([]json.RawMessage, error) {
	if file == "" {
		if !json.Valid([]byte(inline)) {
			return nil, fmt.Errorf("--args is not JSON: %s", inline)
		}
		return []json.RawMessage{json.RawMessage(inline)}, nil
	}
	lines, err := readLines(file)
	if err != nil {
		return nil, fmt.Errorf("--args-file: %w", err)
	}
	out := make([]json.RawMessage, 0, len(lines))
	for i, l := range lines {
		if !json.Valid([]byte(l)) {
			return nil, fmt.Errorf("--args-file line %d is not JSON", i+1)
		}
		out = append(out, json.RawMessage(l))
	}
	if len(out) == 0 {
		return nil, errors.New("--args-file is empty")
	}
	return out, nil
}

// readLines returns the non-empty lines of file (none for "").
func readLines(file string) ([]string, error) {
	if file == "" {
		return nil, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func slicesMax(v []int) int {
	m := 1
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// isTerminal reports whether w is a character device (a terminal), where
// a progress bar is welcome; pipes and files get none.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
