package reliability

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// The fleet test (`make fleet`): HAProxy from Debian's
// packages, configured by deploy/fleet/haproxy.cfg, in front of three
// `toolsvc serve` replicas on one PostgreSQL schema and one Redis database,
// sharing deploy/fleet/toolsvc.yaml and deploy/fleet/auth.yaml. A mixed load
// runs through HAProxy — MCP 2025-11-25 sessions on the TypeScript SDK v1
// client (test/mcp/fleet.mjs), MCP 2026-07-28 requests, gRPC and REST,
// reads and writes, every write with an idempotency key and a unique token
// — while every replica is sent SIGTERM and restarted in turn, twice, and
// then one replica is SIGKILLed and restarted. Every logical call retries
// a retryable failure with the same key, within a bound.
//
// It fails when a call failed without a retryable error, an acknowledged
// write is not in the store, a write is in the store twice, a call never
// got through its retries outside the SIGKILL window, an MCP 2025 session
// was not known to the replica a request reached (HTTP 404), more calls
// failed at the SIGKILL than were in flight, or a replica did not exit
// cleanly on SIGTERM. It prints a table for docs/RELIABILITY.md.

// Replicas in the fleet: deploy/fleet/haproxy.cfg names r1..r3.
const fleetReplicas = 3

// fleetDrain is the --shutdown-drain the replicas get when the binary has
// the flag: longer than HAProxy's fall x inter (2 x 500 ms) plus a check.
const fleetDrain = 3 * time.Second

// fleetCall is one logical call of the load: its attempts until success,
// a failure that retrying cannot help, or the retry bound.
type fleetCall struct {
	Tr        string      `json:"tr"`
	StartMs   int64       `json:"start"`
	Ms        int64       `json:"ms"`
	Tool      string      `json:"tool"`
	OK        bool        `json:"ok"`
	Attempts  int         `json:"attempts"`
	Fails     []fleetFail `json:"fails"`
	Token     string      `json:"token"`
	Session04 int         `json:"session404"`
}

// fleetFail is one failed attempt.
type fleetFail struct {
	Retryable bool   `json:"retryable"`
	What      string `json:"what"`
	// Unknown is toolsvc's "outcome unknown" answer to a keyed write: the
	// first call with the key was on a replica that stopped mid-call, so
	// its effect may or may not stand (the client checks, then uses a new
	// key). It is the right answer only for the SIGKILLed replica's
	// in-flight writes.
	Unknown bool `json:"unknown"`
}

// unretryable reports whether any attempt failed in a way retrying cannot
// help.
func (c *fleetCall) unretryable() bool {
	return slices.ContainsFunc(c.Fails, func(f fleetFail) bool { return !f.Retryable && !f.Unknown })
}

// unknown reports whether the call ended on an "outcome unknown" answer.
func (c *fleetCall) unknown() bool {
	return len(c.Fails) > 0 && c.Fails[len(c.Fails)-1].Unknown
}

// Bounds of one logical call, retries included (fleet.mjs has the same).
const (
	fleetMaxAttempts = 8
	fleetMaxCall     = 20 * time.Second
	fleetAttempt     = 15 * time.Second
	fleetPace        = 100 * time.Millisecond
)

// fleetKeys are deploy/fleet/auth.yaml's API keys, in its order.
var fleetKeys = []string{
	"fleet-acme-1-0f4c2a9e7b", "fleet-acme-2-5d81b3c6a4", "fleet-acme-3-93e7d0f2c1", "fleet-acme-4-7a2f6e1b8d",
	"fleet-globex-1-c4b9e8a1f3", "fleet-globex-2-1e6d7c3b9a", "fleet-globex-3-8b5a4f2e6c", "fleet-globex-4-2d9c1a7e5f",
}

// Transports of the load, as the report names them.
const (
	flGRPC    = "grpc"
	flREST    = "rest"
	flMCP2026 = "mcp 2026-07-28"
	flMCP2025 = "mcp2025" // fleet.mjs's name; reported as "mcp 2025-11-25 (TS SDK v1)"
)

// fleetSteady is the steady-state phase and the settling after the
// SIGKILL: FLEET_DURATION (Go duration), default 20s.
func fleetSteady(tb testing.TB) time.Duration {
	tb.Helper()
	v := os.Getenv("FLEET_DURATION")
	if v == "" {
		return 20 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 5*time.Second || d > 10*time.Minute {
		tb.Fatalf("FLEET_DURATION=%q: want a duration between 5s and 10m", v)
	}
	return d
}

// TestFleetRollingRestart is the fleet test; see the comment above.
func TestFleetRollingRestart(t *testing.T) {
	if os.Getenv("TOOLSVC_FLEET") == "" {
		t.Skip("the fleet test runs with TOOLSVC_FLEET=1 (`make fleet`)")
	}
	haproxy := testenv.LookPath(t, "haproxy")
	node := testenv.LookPath(t, "node")
	redisBase := os.Getenv("TOOLSVC_TEST_REDIS")
	if redisBase == "" {
		t.Skip("TOOLSVC_TEST_REDIS is not set; run the test with `make fleet`, which sets it")
	}
	steady := fleetSteady(t)
	root := testenv.RepoRoot(t)
	fleetNodeModules(t, root)
	bin := toolsvcBinary(t)

	// One PostgreSQL schema and one Redis database of this run.
	dsn := testserver.PostgresDSN(t)
	ru, err := url.Parse(redisBase)
	if err != nil {
		t.Fatal(err)
	}
	ru.Path = "/" + strconv.Itoa(8+rand.IntN(8)) // other tests use database 0
	redisURL := ru.String()

	drain := fleetHasFlag(t, bin, "shutdown-drain")
	// The replicas share a copy of deploy/fleet/auth.yaml with one more key,
	// which the roll revokes by editing the file (a policy change mid-roll).
	authFile := filepath.Join(t.TempDir(), "auth.yaml")
	fleetBaseAuth, err := os.ReadFile(filepath.Join(root, "deploy", "fleet", "auth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFleetAuth(t, authFile, string(fleetBaseAuth)+fleetRevokedEntry)
	args := []string{"--config", filepath.Join(root, "deploy", "fleet", "toolsvc.yaml"),
		"--auth-file", authFile, "--db", dsn, "--redis", redisURL}
	if drain {
		args = append(args, "--shutdown-drain", fleetDrain.String())
	} else {
		t.Logf("NOTE: this toolsvc has no --shutdown-drain: SIGTERM stops accepting at once, and HAProxy learns it from refused connections")
	}
	var (
		pcs   [fleetReplicas]*procConfig
		procs [fleetReplicas]*process
	)
	// FLEET_LOG_DIR keeps the replicas' logs after the run (FLEET_LOG_LEVEL,
	// default warn).
	logDir := os.Getenv("FLEET_LOG_DIR")
	for i := range pcs {
		pcs[i] = newProcConfig(t, args...)
		if logDir != "" {
			pcs[i].LogFile = filepath.Join(logDir, fmt.Sprintf("r%d.log", i+1))
			pcs[i].LogLevel = os.Getenv("FLEET_LOG_LEVEL") // default warn
		}
		// The first replica migrates the schema alone.
		procs[i] = pcs[i].start(t)
	}
	ha := startHAProxy(t, haproxy, root, pcs)
	ha.waitStatus(t, "UP", 0, 1, 2)
	t.Logf("fleet up: HAProxy http://%s grpc %s; replicas %s, %s, %s", ha.httpAddr, ha.grpcAddr, procs[0].HTTP, procs[1].HTTP, procs[2].HTTP)
	sharedSessions := fleetSessionsShared(t, procs[0].HTTP, procs[1].HTTP)
	t.Logf("MCP 2025 session opened on r1 known to r2: %v", sharedSessions)

	// The load: two principals per transport; fleet.mjs holds one MCP 2025
	// session per principal.
	rec := &fleetRecorder{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	conn, err := grpc.NewClient(ha.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// restCall and mcpClient share httpClient: its connections to HAProxy
	// must not outlive the test (goleak).
	defer httpClient.CloseIdleConnections()
	base := "http://" + ha.httpAddr
	for w, tr := range []string{flGRPC, flGRPC, flREST, flREST, flMCP2026, flMCP2026} {
		lg := &fleetLoad{tr: tr, key: fleetKeys[w], id: fmt.Sprintf("w%d", w), conn: conn, base: base}
		wg.Go(func() { lg.run(stop, rec) })
	}
	nodeOut := startFleetNode(t, node, root, base+"/mcp", []string{fleetKeys[6], fleetKeys[7]})
	concurrency := 6 + 2

	phases := &fleetPhases{}
	phases.mark("steady")
	time.Sleep(steady)
	fleetRevokedWorks(t, conn, base, procs[:], true)

	// The roll: every replica, SIGTERM then restarted, twice; the next one
	// only when HAProxy sees the last one up again.
	phases.mark("roll")
	var (
		exitErrs []string
		drained  int // stops during which /readyz answered 503 while the replica was still up
	)
	grace := 10*time.Second + fleetDrain + 10*time.Second
	for round := range 2 {
		for i := range procs {
			t.Logf("roll %d: SIGTERM r%d at %s", round+1, i+1, time.Now().UTC().Format("15:04:05.000"))
			watch := watchReadyz(procs[i])
			if err := procs[i].terminate(t, grace); err != nil {
				exitErrs = append(exitErrs, fmt.Sprintf("round %d r%d: %v", round+1, i+1, err))
			}
			if n := watch(); n > 0 {
				drained++
			}
			procs[i] = pcs[i].start(t)
			ha.waitStatus(t, "UP", i)
		}
		if round == 0 {
			// Mid-roll, the operator revokes a key by editing the file:
			// every replica refuses it within the stated bound
			// (--auth-poll, 2 s, plus reading the file), the load goes on.
			writeFleetAuth(t, authFile, string(fleetBaseAuth))
			took := fleetRevokedWorks(t, conn, base, procs[:], false)
			t.Logf("policy change mid-roll: the revoked key refused by every replica and through HAProxy %s after the edit (checked every 100 ms)", took.Round(time.Millisecond))
			if took > fleetRevokeBound {
				t.Errorf("the revoked key was refused everywhere only %s after the edit (bound %s)", took, fleetRevokeBound)
			}
		}
	}

	// SIGKILL of one replica: only its in-flight calls may fail.
	phases.mark("sigkill")
	t.Logf("SIGKILL r2 at %s", time.Now().UTC().Format("15:04:05.000"))
	procs[1].kill()
	ha.waitStatus(t, "DOWN", 1)
	procs[1] = pcs[1].start(t)
	ha.waitStatus(t, "UP", 1)
	time.Sleep(steady / 2)
	phases.mark("end")

	close(stop)
	wg.Wait()
	calls := append(rec.calls(), nodeOut.stop(t)...)
	if len(calls) == 0 {
		t.Fatal("no call was made")
	}
	haStats := ha.stats(t)

	stored, running := fleetStoredWrites(t, dsn)
	rep := fleetReport(calls, phases, stored)
	rep.keysRunning = running
	rep.drain, rep.sharedSessions, rep.haproxy, rep.concurrency = drain, sharedSessions, haStats, concurrency
	rep.exitErrs = exitErrs
	rep.drained, rep.stops = drained, 2*fleetReplicas
	t.Logf("fleet report (paste into docs/RELIABILITY.md):\n%s", rep.table())
	for _, f := range rep.failures() {
		t.Error(f)
	}
}

// watchReadyz polls p's /readyz from now until p exits; the returned
// function waits for that and says how many answers were 503: with
// --shutdown-drain, a stopping replica answers 503 for the drain delay
// while it still serves.
func watchReadyz(p *process) func() int {
	n503 := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for range 2000 { // 100 s at most; terminate's bound is shorter
			select {
			case <-p.done:
				return
			default:
			}
			if resp, err := c.Get(p.HTTP + "/readyz"); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable {
					n503++
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() int {
		<-done
		return n503
	}
}

// fleetNodeModules installs test/mcp's locked packages when missing.
func fleetNodeModules(t *testing.T, root string) {
	t.Helper()
	dir := filepath.Join(root, "test", "mcp")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
		return
	}
	testenv.LookPath(t, "npm")
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in test/mcp: %v\n%s", err, out)
	}
}

// fleetHasFlag reports whether `toolsvc serve -h` lists flag.
func fleetHasFlag(t *testing.T, bin, flag string) bool {
	t.Helper()
	out, _ := exec.Command(bin, "serve", "-h").CombinedOutput() // -h exits non-zero
	return strings.Contains(string(out), "-"+flag+" ")
}

// fleetSessionsShared opens an MCP 2025 session on replica a and reports
// whether replica b knows it.
func fleetSessionsShared(t *testing.T, a, b string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mc, err := newMCPClient(ctx, a, fleetKeys[0], nil)
	if err != nil {
		t.Fatalf("MCP session on r1: %v", err)
	}
	mc.url = b + "/mcp"
	st, _, _, err := mc.post(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	if err != nil {
		t.Fatalf("tools/list on r2: %v", err)
	}
	return st == http.StatusOK
}

// --- HAProxy ---

// haproxyProc is HAProxy running deploy/fleet/haproxy.cfg in the foreground.
type haproxyProc struct {
	cmd                *exec.Cmd
	httpAddr, grpcAddr string
	sock               string
	logs               *syncBuffer
	done               chan struct{}
}

// startHAProxy starts HAProxy in front of the replicas' ports; it is
// killed at cleanup.
func startHAProxy(t *testing.T, bin, root string, pcs [fleetReplicas]*procConfig) *haproxyProc {
	t.Helper()
	// A unix socket path must be short: not under t.TempDir's long name.
	sockDir, err := os.MkdirTemp("", "fleet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	h := &haproxyProc{
		httpAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), grpcAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		sock: filepath.Join(sockDir, "admin.sock"), logs: &syncBuffer{}, done: make(chan struct{}),
	}
	env := append(os.Environ(), "FLEET_HTTP_BIND="+h.httpAddr, "FLEET_GRPC_BIND="+h.grpcAddr, "FLEET_STATS_SOCKET="+h.sock)
	for i, pc := range pcs {
		env = append(env, fmt.Sprintf("FLEET_R%d_HTTP=127.0.0.1:%d", i+1, pc.HTTPPort), fmt.Sprintf("FLEET_R%d_GRPC=127.0.0.1:%d", i+1, pc.GRPCPort))
	}
	// -db: foreground, no daemon, so that the test owns the process.
	h.cmd = exec.Command(bin, "-db", "-f", filepath.Join(root, "deploy", "fleet", "haproxy.cfg"))
	h.cmd.Env = env
	h.cmd.Stdout, h.cmd.Stderr = h.logs, h.logs
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	t.Cleanup(func() {
		_ = h.cmd.Process.Signal(syscall.SIGKILL)
		<-h.done
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-h.done:
			t.Fatalf("haproxy exited at start:\n%s", h.logs.String())
		default:
		}
		if _, err := h.show("show info"); err == nil {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy's admin socket not answering after 20s:\n%s", h.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// show sends one command to the admin socket and returns the answer.
func (h *haproxyProc) show(cmd string) (string, error) {
	c, err := net.DialTimeout("unix", h.sock, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, cmd+"\n"); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// serverStats reads `show stat` and returns the rows of the servers of
// backend, by server name, as column name to value.
func (h *haproxyProc) serverStats(backend string) (map[string]map[string]string, error) {
	out, err := h.show("show stat")
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# ")))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("show stat: %w", err)
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("show stat: no rows in %q", out)
	}
	head := rows[0]
	res := map[string]map[string]string{}
	for _, row := range rows[1:] {
		if len(row) < 2 || row[0] != backend || row[1] == "BACKEND" || row[1] == "FRONTEND" {
			continue
		}
		m := map[string]string{}
		for i, k := range head {
			if i < len(row) {
				m[k] = row[i]
			}
		}
		res[row[1]] = m
	}
	return res, nil
}

// waitStatus waits until HAProxy's check status of every replica index
// given starts with want ("UP", "DOWN"), for at most 30 s.
func (h *haproxyProc) waitStatus(t *testing.T, want string, replicas ...int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := h.serverStats("toolsvc_http")
		all := err == nil
		for _, i := range replicas {
			all = all && strings.HasPrefix(st[fmt.Sprintf("r%d", i+1)]["status"], want)
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("HAProxy does not see replicas %v %s after 30s: %v %v\n%s", replicas, want, st, err, h.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stats sums HAProxy's own counters over both backends: retries (wretr),
// redispatches (wredis), connection errors (econ), response errors
// (eresp) and the calls each replica served (stot).
func (h *haproxyProc) stats(t *testing.T) map[string]int {
	t.Helper()
	sum := map[string]int{}
	for _, be := range []string{"toolsvc_http", "toolsvc_grpc"} {
		st, err := h.serverStats(be)
		if err != nil {
			t.Fatalf("haproxy stats: %v", err)
		}
		for srv, row := range st {
			for _, k := range []string{"wretr", "wredis", "econ", "eresp"} {
				n, _ := strconv.Atoi(row[k])
				sum[k] += n
			}
			n, _ := strconv.Atoi(row["stot"])
			sum["stot "+srv] += n
		}
	}
	return sum
}

// --- the Go load ---

// fleetRecorder collects the calls of the Go workers.
type fleetRecorder struct {
	mu sync.Mutex
	cs []fleetCall
}

func (r *fleetRecorder) add(c fleetCall) {
	r.mu.Lock()
	r.cs = append(r.cs, c)
	r.mu.Unlock()
}

func (r *fleetRecorder) calls() []fleetCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.cs)
}

// fleetLoad is one worker: one transport, one principal, calls in a loop.
type fleetLoad struct {
	tr, key, id string
	conn        *grpc.ClientConn
	base        string
	rpcID       int
}

// run makes calls until stop is closed: a write (add-memory with a unique
// token and an idempotency key) every third call, reads otherwise. A call
// in progress when stop closes finishes, retries included.
func (l *fleetLoad) run(stop <-chan struct{}, rec *fleetRecorder) {
	for seq := 0; seq < 100000; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		var (
			tool  string
			args  map[string]any
			token string
		)
		switch seq % 3 {
		case 0:
			token = fmt.Sprintf("%s%ss%dx%08x", strings.ReplaceAll(l.tr, " ", ""), l.id, seq, rand.Uint32())
			tool, args = "add-memory", map[string]any{"content": "fleet write " + token + " from " + l.tr}
		case 1:
			tool, args = "search-memories", map[string]any{"query": "fleet write"}
		default:
			tool, args = "query-knowledge", map[string]any{"query": "database selection"}
		}
		rec.add(l.call(tool, args, token))
		time.Sleep(fleetPace)
	}
}

// call makes one logical call: attempts with backoff until success, a
// failure retrying cannot help, or the bound; a write keeps its key.
func (l *fleetLoad) call(tool string, args map[string]any, token string) fleetCall {
	c := fleetCall{Tr: l.tr, Tool: tool, Token: token}
	start := time.Now()
	c.StartMs = start.UnixMilli()
	key := ""
	if token != "" {
		key = "k-" + token
	}
	for c.Attempts < fleetMaxAttempts && time.Since(start) < fleetMaxCall {
		c.Attempts++
		ctx, cancel := context.WithTimeout(context.Background(), fleetAttempt)
		ok, f := l.attempt(ctx, tool, args, key)
		cancel()
		if ok {
			c.OK = true
			break
		}
		c.Fails = append(c.Fails, f)
		if !f.Retryable {
			break
		}
		time.Sleep(min(time.Second, 50*time.Millisecond<<c.Attempts))
	}
	c.Ms = time.Since(start).Milliseconds()
	return c
}

// attempt makes one attempt over the worker's transport and classifies it.
func (l *fleetLoad) attempt(ctx context.Context, tool string, args map[string]any, key string) (bool, fleetFail) {
	switch l.tr {
	case flGRPC:
		return l.grpcAttempt(ctx, tool, args, key)
	case flREST:
		body, _ := json.Marshal(args)
		hdr := map[string]string{}
		if key != "" {
			hdr["Idempotency-Key"] = key
		}
		o, err := restCall(ctx, l.base, l.key, tool, body, hdr)
		return fleetClassifyHTTP(o, err)
	default:
		return l.mcp2026Attempt(ctx, tool, args, key)
	}
}

// grpcAttempt calls ToolService.CallTool through HAProxy. A status with a
// ToolError is toolsvc's answer and says itself whether it is retryable; a
// status without one comes from the balancer or the connection (a stream
// reset, UNAVAILABLE for a 502/503): retryable.
func (l *fleetLoad) grpcAttempt(ctx context.Context, tool string, args map[string]any, key string) (bool, fleetFail) {
	st, err := structpb.NewStruct(args)
	if err != nil {
		return false, fleetFail{What: err.Error()}
	}
	md := metadata.Pairs("authorization", "Bearer "+l.key)
	if key != "" {
		md.Set("idempotency-key", key)
	}
	_, err = toolsvcv1.NewToolServiceClient(l.conn).CallTool(metadata.NewOutgoingContext(ctx, md), &toolsvcv1.CallToolRequest{Name: tool, Arguments: st})
	if err == nil {
		return true, fleetFail{}
	}
	s, _ := status.FromError(err)
	for _, d := range s.Details() {
		if te, ok := d.(*toolsvcv1.ToolError); ok {
			return false, fleetFail{Retryable: te.GetRetryable(), What: "tool " + te.GetCode(),
				Unknown: te.GetDetails().GetFields()["outcome"].GetStringValue() == "unknown"}
		}
	}
	return false, fleetFail{Retryable: true, What: "grpc " + s.Code().String() + ": " + fleetShort(s.Message())}
}

// mcp2026Attempt sends one sessionless 2026-07-28 tools/call.
func (l *fleetLoad) mcp2026Attempt(ctx context.Context, tool string, args map[string]any, key string) (bool, fleetFail) {
	l.rpcID++
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "toolsvc-fleet", "version": "1.0.0"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	if key != "" {
		meta["idempotencyKey"] = key
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": l.rpcID, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args, "_meta": meta}})
	mc := &mcpClient{url: l.base + "/mcp", token: l.key, version: "2026-07-28",
		headers: map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": tool}}
	o, err := mc.send(ctx, body)
	return fleetClassifyHTTP(o, err)
}

// fleetClassifyHTTP classifies a REST or MCP answer: a connection error
// and the balancer's 502/503/504 (no ToolError) are retryable, a
// ToolError says itself, anything else (a JSON-RPC fault, another HTTP
// status) is not.
func fleetClassifyHTTP(o outcome, err error) (bool, fleetFail) {
	switch {
	case err != nil:
		return false, fleetFail{Retryable: true, What: "connection: " + fleetShort(err.Error())}
	case o.Code == "OK":
		return true, fleetFail{}
	case o.Error != nil:
		r, _ := o.Error["retryable"].(bool)
		details, _ := o.Error["details"].(map[string]any)
		return false, fleetFail{Retryable: r, What: "tool " + o.Code, Unknown: details["outcome"] == "unknown"}
	case o.HTTPStatus == http.StatusBadGateway || o.HTTPStatus == http.StatusServiceUnavailable || o.HTTPStatus == http.StatusGatewayTimeout:
		return false, fleetFail{Retryable: true, What: fmt.Sprintf("http %d", o.HTTPStatus)}
	}
	return false, fleetFail{What: fmt.Sprintf("%s http %d rpc %d: %s", o.Code, o.HTTPStatus, o.RPCError, fleetShort(o.Message))}
}

// fleetShort keeps the first line of an error, at most 120 bytes, with
// the loopback ports (which differ every run) dropped.
func fleetShort(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = regexp.MustCompile(`127\.0\.0\.1:\d+`).ReplaceAllString(s, "127.0.0.1")
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

// --- the TypeScript SDK load ---

// fleetNode is test/mcp/fleet.mjs running.
type fleetNode struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	errs *syncBuffer
	done chan struct{}
}

// startFleetNode runs fleet.mjs with one session per key until stop.
func startFleetNode(t *testing.T, node, root, mcpURL string, keys []string) *fleetNode {
	t.Helper()
	n := &fleetNode{out: &syncBuffer{}, errs: &syncBuffer{}, done: make(chan struct{})}
	// The script stops on SIGTERM; the duration is only its own bound.
	n.cmd = exec.Command(node, "fleet.mjs", mcpURL, "900000")
	n.cmd.Dir = filepath.Join(root, "test", "mcp")
	n.cmd.Env = append(os.Environ(), "FLEET_TOKENS="+strings.Join(keys, ","), "FLEET_PACE_MS="+strconv.Itoa(int(fleetPace.Milliseconds())))
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.errs
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		_ = n.cmd.Process.Signal(syscall.SIGKILL)
		<-n.done
	})
	return n
}

// stop ends the script (its calls in progress finish) and returns its
// calls.
func (n *fleetNode) stop(t *testing.T) []fleetCall {
	t.Helper()
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(60 * time.Second):
		t.Errorf("fleet.mjs did not stop within 60s of SIGTERM")
		_ = n.cmd.Process.Signal(syscall.SIGKILL)
		<-n.done
	}
	if code := n.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("fleet.mjs exited %d:\n%s", code, n.errs.String())
	}
	// syncBuffer resets past 8 MiB: the load writes far less.
	var calls []fleetCall
	sc := bufio.NewScanner(strings.NewReader(n.out.String()))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var c fleetCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Errorf("fleet.mjs printed %q: %v", sc.Text(), err)
			continue
		}
		calls = append(calls, c)
	}
	if len(calls) == 0 {
		t.Errorf("fleet.mjs made no call:\n%s", n.errs.String())
	}
	return calls
}

// --- phases, store check and report ---

// fleetPhases are the moments the load's phases began.
type fleetPhases struct {
	names []string
	at    []int64 // unix ms
}

func (p *fleetPhases) mark(name string) {
	p.names = append(p.names, name)
	p.at = append(p.at, time.Now().UnixMilli())
}

// of names the phase that ms (unix) falls in.
func (p *fleetPhases) of(ms int64) string {
	name := p.names[0]
	for i, at := range p.at {
		if ms >= at {
			name = p.names[i]
		}
	}
	if name == "end" {
		name = p.names[len(p.names)-2] // finished after the last mark: the last phase
	}
	return name
}

// span is how long phase name lasted.
func (p *fleetPhases) span(name string) time.Duration {
	i := slices.Index(p.names, name)
	if i < 0 || i+1 >= len(p.at) {
		return 0
	}
	return time.Duration(p.at[i+1]-p.at[i]) * time.Millisecond
}

// fleetWriteToken finds a write's token in a memory's content.
var fleetWriteToken = regexp.MustCompile(`^fleet write (\S+) from `)

// fleetStoredWrites counts every fleet write in the store by token, over
// both tenants, and lists the idempotency keys still claimed by a call
// that never finished (done = false), with when they were claimed.
func fleetStoredWrites(t *testing.T, dsn string) (map[string]int, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT content FROM memories WHERE content LIKE 'fleet write %'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := map[string]int{}
	for rows.Next() {
		var content string
		if err := rows.Scan(&content); err != nil {
			t.Fatal(err)
		}
		if m := fleetWriteToken.FindStringSubmatch(content); m != nil {
			n[m[1]]++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows, err = c.Query(ctx, `SELECT key, tool, created_at FROM idempotency_keys WHERE NOT done ORDER BY created_at`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var running []string
	for rows.Next() {
		var (
			key, tool string
			at        time.Time
		)
		if err := rows.Scan(&key, &tool, &at); err != nil {
			t.Fatal(err)
		}
		running = append(running, fmt.Sprintf("%s %s claimed at %s", tool, key, at.UTC().Format("15:04:05.000")))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n, running
}

// fleetRow is one phase and transport of the report.
type fleetRow struct {
	phase, tr                                 string
	calls, ok, retriedOK, gaveUp, unretryable int
	unknown                                   int
	session404, failedCalls                   int
	lat                                       []time.Duration
}

// fleetSummary is the whole run.
type fleetSummary struct {
	rows                                []*fleetRow
	phases                              *fleetPhases
	writes, acked, lost, dup, unackedIn int
	examples                            map[string][]string // unretryable and gave-up, by phase
	drain, sharedSessions               bool
	haproxy                             map[string]int
	concurrency                         int
	exitErrs                            []string
	// drained of stops SIGTERMs saw /readyz answer 503 before the exit.
	drained, stops int
	// keysRunning are idempotency keys left claimed by a call that never
	// finished: their retries wait for a result that never comes, until
	// the key expires (--idempotency-ttl).
	keysRunning []string
}

// fleetReport sums the calls by phase and transport and checks the writes
// against the store.
func fleetReport(calls []fleetCall, phases *fleetPhases, stored map[string]int) *fleetSummary {
	s := &fleetSummary{phases: phases, examples: map[string][]string{}}
	rows := map[string]*fleetRow{}
	row := func(phase, tr string) *fleetRow {
		k := phase + "\x00" + tr
		if rows[k] == nil {
			rows[k] = &fleetRow{phase: phase, tr: tr}
			s.rows = append(s.rows, rows[k])
		}
		return rows[k]
	}
	for _, c := range calls {
		// By its end: a call in flight when a phase began (a replica
		// stopped or killed under it) belongs to that phase.
		phase := phases.of(c.StartMs + c.Ms)
		for _, r := range []*fleetRow{row(phase, c.Tr), row(phase, "all")} {
			r.calls++
			r.session404 += c.Session04
			if slices.ContainsFunc(c.Fails, func(f fleetFail) bool { return f.What != "http 404 session" }) {
				r.failedCalls++ // a session 404 has its own goal
			}
			switch {
			case c.OK && c.Attempts > 1:
				r.retriedOK++
				fallthrough
			case c.OK:
				r.ok++
				r.lat = append(r.lat, time.Duration(c.Ms)*time.Millisecond)
			case c.unknown():
				r.unknown++
			case c.unretryable():
				r.unretryable++
			default:
				r.gaveUp++
			}
		}
		if !c.OK && len(c.Fails) > 0 && len(s.examples[phase]) < 5 {
			s.examples[phase] = append(s.examples[phase], fmt.Sprintf("%s %s %s at %s: %+v", c.Tr, c.Tool, c.Token,
				time.UnixMilli(c.StartMs).UTC().Format("15:04:05.000"), c.Fails))
		}
		if c.Token != "" {
			s.writes++
			n := stored[c.Token]
			switch {
			case c.OK:
				s.acked++
				if n == 0 {
					s.lost++
				}
			case n > 0:
				s.unackedIn++
			}
			if n > 1 {
				s.dup++
			}
		}
	}
	slices.SortStableFunc(s.rows, func(a, b *fleetRow) int {
		return slices.Index(phases.names, a.phase) - slices.Index(phases.names, b.phase)
	})
	return s
}

// pct is the q-quantile of ds, in ms.
func pct(ds []time.Duration, q float64) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return strconv.FormatInt(s[min(len(s)-1, int(float64(len(s))*q))].Milliseconds(), 10)
}

// table renders the report as Markdown.
func (s *fleetSummary) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "--shutdown-drain: %v (SIGTERMs during which /readyz answered 503 before the exit: %d of %d); MCP 2025 sessions shared between replicas: %v\n",
		s.drain, s.drained, s.stops, s.sharedSessions)
	for _, p := range []string{"steady", "roll", "sigkill"} {
		fmt.Fprintf(&b, "%s: %s; ", p, s.phases.span(p).Round(time.Second))
	}
	b.WriteString("\n\n| phase | transport | calls | ok | ok after a retry | failed, retryable (gave up) | failed, not retryable | outcome unknown | MCP session 404 | p50 ms | p99 ms |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range s.rows {
		tr := r.tr
		if tr == flMCP2025 {
			tr = "mcp 2025-11-25 (TS SDK v1)"
		}
		if tr == "all" {
			tr = "**all**"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %d | %d | %s | %s |\n", r.phase, tr, r.calls, r.ok, r.retriedOK, r.gaveUp, r.unretryable, r.unknown, r.session404, pct(r.lat, 0.5), pct(r.lat, 0.99))
	}
	fmt.Fprintf(&b, "\nWrites: %d sent, %d acknowledged, %d acknowledged but lost, %d applied twice, %d applied without an acknowledgement (the client gave up).\n",
		s.writes, s.acked, s.lost, s.dup, s.unackedIn)
	fmt.Fprintf(&b, "HAProxy: %d retries, %d redispatches, %d connection errors, %d response errors; calls served per replica r1/r2/r3: %d/%d/%d.\n",
		s.haproxy["wretr"], s.haproxy["wredis"], s.haproxy["econ"], s.haproxy["eresp"], s.haproxy["stot r1"], s.haproxy["stot r2"], s.haproxy["stot r3"])
	fmt.Fprintf(&b, "Idempotency keys left claimed by a call that never finished: %d.\n", len(s.keysRunning))
	for _, k := range s.keysRunning {
		fmt.Fprintf(&b, "key still running: %s\n", k)
	}
	for _, p := range s.phases.names {
		for _, e := range s.examples[p] {
			fmt.Fprintf(&b, "failed call (%s): %s\n", p, e)
		}
	}
	return b.String()
}

// failures are the goals the run missed.
func (s *fleetSummary) failures() []string {
	var out []string
	for _, r := range s.rows {
		if r.tr != "all" {
			continue
		}
		if r.unretryable > 0 {
			out = append(out, fmt.Sprintf("%s: %d calls failed without a retryable error (goal 0)", r.phase, r.unretryable))
		}
		if r.unknown > 0 && r.phase != "sigkill" {
			out = append(out, fmt.Sprintf("%s: %d keyed writes answered \"outcome unknown\" with no replica killed (goal 0)", r.phase, r.unknown))
		}
		if r.gaveUp > 0 && r.phase != "sigkill" {
			out = append(out, fmt.Sprintf("%s: %d calls still failed after %d attempts or %s (goal 0)", r.phase, r.gaveUp, fleetMaxAttempts, fleetMaxCall))
		}
		if r.session404 > 0 {
			out = append(out, fmt.Sprintf("%s: %d MCP 2025 requests reached a replica that did not know their session (HTTP 404; goal 0: sessions valid on every replica, issue 33 §2)", r.phase, r.session404))
		}
		if r.phase == "sigkill" && r.failedCalls > s.concurrency {
			out = append(out, fmt.Sprintf("sigkill: %d calls failed, more than the %d in flight at once (only the killed replica's in-flight calls may fail)", r.failedCalls, s.concurrency))
		}
	}
	if s.lost > 0 {
		out = append(out, fmt.Sprintf("%d acknowledged writes are not in the store (goal 0)", s.lost))
	}
	if s.dup > 0 {
		out = append(out, fmt.Sprintf("%d writes are in the store twice or more (goal 0)", s.dup))
	}
	if s.acked == 0 {
		out = append(out, "no write was acknowledged")
	}
	for _, e := range s.exitErrs {
		out = append(out, "SIGTERM: "+e)
	}
	if s.drain && s.drained < s.stops {
		out = append(out, fmt.Sprintf("--shutdown-drain given, but /readyz answered 503 before the exit in only %d of %d SIGTERMs", s.drained, s.stops))
	}
	return out
}

// TestFleetReportGoals checks the fleet test's verdicts on made-up runs:
// each goal it states can fail it, and what the SIGKILL may cost is
// allowed only there.
func TestFleetReportGoals(t *testing.T) {
	t.Parallel()
	phases := &fleetPhases{names: []string{"steady", "roll", "sigkill", "end"}, at: []int64{0, 1000, 2000, 3000}}
	ok := func(start int64, token string) fleetCall {
		return fleetCall{Tr: flGRPC, StartMs: start, Ms: 10, Tool: "add-memory", OK: true, Attempts: 1, Token: token}
	}
	retryable := []fleetFail{{Retryable: true, What: "http 502"}}
	for _, tc := range []struct {
		name   string
		calls  []fleetCall
		stored map[string]int
		want   []string // substrings of the failures, in order; none for a pass
		// drainNot503 runs with --shutdown-drain, this many of 6 SIGTERMs
		// without a 503 from /readyz.
		drainNot503 int
	}{
		{name: "drain without a 503", calls: []fleetCall{ok(10, "a")}, stored: map[string]int{"a": 1}, drainNot503: 1,
			want: []string{"in only 5 of 6 SIGTERMs"}},
		{name: "clean run", calls: []fleetCall{ok(10, "a"), ok(1500, "b"), ok(2500, "")}, stored: map[string]int{"a": 1, "b": 1}},
		{name: "a retried call is fine", calls: []fleetCall{ok(10, "a"), {Tr: flREST, StartMs: 1100, Ms: 300, OK: true, Attempts: 2, Fails: retryable}},
			stored: map[string]int{"a": 1}},
		{name: "acknowledged write lost", calls: []fleetCall{ok(10, "a")}, stored: map[string]int{}, want: []string{"acknowledged writes are not in the store"}},
		{name: "write applied twice", calls: []fleetCall{ok(10, "a")}, stored: map[string]int{"a": 2}, want: []string{"in the store twice"}},
		{name: "unretryable failure", calls: []fleetCall{ok(10, "a"), {Tr: flREST, StartMs: 1200, Ms: 5, Attempts: 1, Fails: []fleetFail{{What: "RPC_ERROR"}}}},
			stored: map[string]int{"a": 1}, want: []string{"roll: 1 calls failed without a retryable error"}},
		{name: "gave up during the roll", calls: []fleetCall{ok(10, "a"), {Tr: flGRPC, StartMs: 1200, Ms: 5, Attempts: 8, Fails: slices.Repeat(retryable, 8)}},
			stored: map[string]int{"a": 1}, want: []string{"roll: 1 calls still failed"}},
		{name: "gave up at the SIGKILL is allowed", calls: []fleetCall{ok(10, "a"), {Tr: flGRPC, StartMs: 1990, Ms: 500, Attempts: 8, Fails: slices.Repeat(retryable, 8)}},
			stored: map[string]int{"a": 1}},
		{name: "outcome unknown at the SIGKILL is allowed", calls: []fleetCall{ok(10, "a"), {Tr: flREST, StartMs: 1990, Ms: 16000, Attempts: 4, Token: "b",
			Fails: append(slices.Repeat(retryable, 3), fleetFail{What: "tool CONFLICT", Unknown: true})}},
			stored: map[string]int{"a": 1, "b": 1}},
		{name: "outcome unknown with no replica killed", calls: []fleetCall{ok(10, "a"), {Tr: flREST, StartMs: 1200, Ms: 5, Attempts: 1, Token: "b",
			Fails: []fleetFail{{What: "tool CONFLICT", Unknown: true}}}},
			stored: map[string]int{"a": 1}, want: []string{"roll: 1 keyed writes answered \"outcome unknown\""}},
		{name: "session 404", calls: []fleetCall{ok(10, "a"), {Tr: flMCP2025, StartMs: 20, Ms: 50, OK: true, Attempts: 2, Session04: 1, Fails: []fleetFail{{Retryable: true, What: "http 404 session"}}}},
			stored: map[string]int{"a": 1}, want: []string{"steady: 1 MCP 2025 requests reached a replica"}},
		{name: "more failures at the SIGKILL than in flight", calls: append([]fleetCall{ok(10, "a")},
			slices.Repeat([]fleetCall{{Tr: flREST, StartMs: 2100, Ms: 50, OK: true, Attempts: 2, Fails: retryable}}, 3)...),
			stored: map[string]int{"a": 1}, want: []string{"sigkill: 3 calls failed, more than the 2 in flight"}},
		{name: "nothing acknowledged", calls: []fleetCall{{Tr: flGRPC, StartMs: 10, Ms: 5, Attempts: 1, Token: "a", Fails: []fleetFail{{What: "x"}}}},
			want: []string{"steady: 1 calls failed without a retryable error", "no write was acknowledged"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fleetReport(tc.calls, phases, tc.stored)
			s.concurrency = 2
			s.drain, s.drained, s.stops = tc.drainNot503 > 0, 6-tc.drainNot503, 6
			got := s.failures()
			if len(got) != len(tc.want) {
				t.Fatalf("failures = %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("failure %d = %q, want it to say %q", i, got[i], w)
				}
			}
			if tab := s.table(); !strings.Contains(tab, "| phase | transport |") {
				t.Errorf("table without its header:\n%s", tab)
			}
		})
	}
}

// fleetRevokedKey is the key the roll revokes; fleetRevokedEntry its entry
// in the replicas' auth file until then.
const (
	fleetRevokedKey   = "fleet-revoked-6c1e9a2f4b"
	fleetRevokedEntry = `  - key: fleet-revoked-6c1e9a2f4b
    subject: fleet-revoked
    tenant: acme
    permissions: ["*"]
    identifiers: {org_id: acme, team_id: fleet, project_id: roll, user_id: u9}
`
	// fleetRevokeBound is the stated bound of docs/OPERATIONS.md
	// ("Reloading": --auth-poll, 2 s by default, plus reading the file),
	// with room for a loaded machine.
	fleetRevokeBound = 10 * time.Second
)

// writeFleetAuth replaces the auth file at once (a rename), as a
// ConfigMap's update does.
func writeFleetAuth(t *testing.T, path, body string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// fleetRevokedWorks waits until fleetRevokedKey is admitted (want true) or
// refused (UNAUTHORIZED) by every replica over REST and through HAProxy
// over gRPC, and returns how long that took; it fails the test past twice
// fleetRevokeBound.
func fleetRevokedWorks(t *testing.T, conn grpc.ClientConnInterface, base string, procs []*process, want bool) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(2 * fleetRevokeBound)
	admitted := func(o outcome, err error) (bool, bool) { // admitted, decided
		switch {
		case err != nil:
			return false, false
		case o.Code == "UNAUTHORIZED":
			return false, true
		case o.Code == "OK":
			return true, true
		}
		return false, false // shed, unavailable during the roll: ask again
	}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		all := true
		for _, p := range procs {
			got, ok := admitted(restCall(ctx, p.HTTP, fleetRevokedKey, "get-sync-status", []byte(`{}`), nil))
			all = all && ok && got == want
		}
		got, ok := admitted(grpcCall(ctx, conn, fleetRevokedKey, "get-sync-status", map[string]any{}, nil))
		all = all && ok && got == want
		cancel()
		if all {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key %s was not %s everywhere within %s", fleetRevokedKey, map[bool]string{true: "admitted", false: "refused"}[want], 2*fleetRevokeBound)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
