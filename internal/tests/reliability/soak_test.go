package reliability

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/backends"
)

// soakDuration is TOOLSVC_SOAK_DURATION (default 10m).
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	if v := os.Getenv("TOOLSVC_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return 10 * time.Minute
}

// writeAuthFile writes n full-permission API keys of one tenant (per-tool
// rate limits are per principal, so load spreads over them).
func writeAuthFile(t *testing.T, n int) (string, []string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("api_keys:\n")
	tokens := make([]string, n)
	for i := range n {
		tokens[i] = fmt.Sprintf("tsk_soak_%04d_0123456789abcdef", i)
		fmt.Fprintf(&b, "  - key_sha256: %q\n    subject: soak-%d\n    tenant: soak\n    permissions: [\"*\"]\n    identifiers: {org_id: soak, team_id: soak, project_id: soak, user_id: soak-%d}\n", auth.HashKey(tokens[i]), i, i)
	}
	path := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, tokens
}

// metric reads one unlabelled gauge from /metrics at base (the
// process's --metrics-addr listener, which needs no credential).
func metric(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// soakSeedPerPrincipal is TOOLSVC_SOAK_SEED (default store.MatchedCap):
// the memories each principal has before the soak starts.
func soakSeedPerPrincipal(t *testing.T) int {
	t.Helper()
	if v := os.Getenv("TOOLSVC_SOAK_SEED"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("TOOLSVC_SOAK_SEED=%q: want a count", v)
		}
		return n
	}
	return store.MatchedCap
}

// seedSoakStore gives each of n principals perPrincipal memories of the
// kind the soak's add-memory writes, through the store's bulk API, before
// toolsvc opens the file. A search of the soak matches every memory of its
// caller, and its cost grows with those matches until store.MatchedCap,
// where the store stops reading: seeded to the cap, the store is in the
// state it stays in, so the capacity measured first is the capacity of the
// whole run. Seeded empty, capacity fell as the soak's own writes filled
// it, and 80% of the first minute's capacity became an overload.
func seedSoakStore(t *testing.T, path string, n, perPrincipal int) {
	t.Helper()
	if perPrincipal == 0 {
		return
	}
	ctx := t.Context()
	st, err := backends.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bulk, ok := st.(store.MemoryBulkAdder)
	if !ok {
		t.Fatalf("store %s cannot bulk-add", st.Backend())
	}
	start := time.Now()
	batch := make([]*store.Memory, 0, 5000)
	for i := range n * perPrincipal {
		batch = append(batch, &store.Memory{Tenant: "soak", Layer: store.LayerUser, ScopeID: fmt.Sprintf("soak-%d", i%n),
			Content: fmt.Sprintf("load test memory seed %d about %s", i, randomWord()), SourceType: store.SourceImport})
		if len(batch) == cap(batch) || i == n*perPrincipal-1 {
			if err := bulk.AddMemories(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	t.Logf("seeded %d memories (%d per principal) in %s", n*perPrincipal, perPrincipal, time.Since(start).Round(time.Millisecond))
}

// rssAnon is the anonymous resident memory of p (RssAnon in
// /proc/<pid>/status), in bytes.
func rssAnon(t *testing.T, p *process) float64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatal("RssAnon not in /proc status")
	return 0
}

// median is the median of d (0 for none).
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Sorted(slices.Values(d))
	return (d[(len(d)-1)/2] + d[len(d)/2]) / 2
}

// p99Drift compares the typical minute of each half of the steady phase,
// the median of its minutes' p99s: drifted when the second half's exceeds
// the first's by more than half plus 50 ms. A drift (a leak, a store that
// slows as it grows) moves most minutes; what one minute alone shows is a
// burst of queueing, which at 80% of capacity on two shared cores comes
// and goes, and which a p99 over a whole half still reflects: 20 s of
// bursts are more than 1% of a half's calls.
func p99Drift(minutes []time.Duration) (first, second time.Duration, drifted bool) {
	h := len(minutes) / 2
	first, second = median(minutes[:h]), median(minutes[h:])
	return first, second, h > 0 && second > first*3/2+50*time.Millisecond
}

func TestP99Drift(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name    string
		minutes []time.Duration
		want    bool
	}{
		{"flat", ms(60, 62, 58, 61, 59, 63, 60, 62), false},
		{"one burst minute in the second half", ms(61, 63, 114, 62, 57, 82, 111, 334), false},
		{"one burst minute in the first half", ms(900, 60, 62, 58, 61, 59, 63, 60), false},
		{"a slow climb", ms(60, 70, 90, 110, 140, 170, 210, 260), true},
		{"a step at half time", ms(60, 62, 58, 61, 180, 175, 190, 185), true},
		{"one minute", ms(60), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, second, drifted := p99Drift(tc.minutes)
			if drifted != tc.want {
				t.Errorf("p99Drift(%v) = %s, %s, %v; want drifted %v", tc.minutes, first, second, drifted, tc.want)
			}
		})
	}
}

// soakCapacity is the highest rate an open loop of the mix holds: a 20 s
// step holds when nothing failed or was shed and its typical 5 s window
// (the median of four) has a p99 within 3× that of an open loop at half
// the closed loop's rate (the lower of two 10 s windows), the knee past
// which a queue builds. Judged on a whole step, one burst of queueing
// (see p99Drift) decided it: three runs of the same service measured 156,
// 182 and 194 calls/s. The soak's load is an open loop, and a closed loop's
// saturation measures cheaper calls: 32 callers keep both cores busy, so
// wake-ups, batches and write coalescing amortise. In one run the closed
// loop took 9.3 ms of server CPU a call at 193 calls/s and the open loop
// 9.95 ms at 154, so 80% of the closed loop's rate ran the machine at 85%
// and, in waves, at 97%, where it shed. The ramp starts at 70% of a closed
// loop's rate and climbs by 5% of it. The reference runs after 10 s that
// let the closed loop's backlog (audit records, WAL) drain: a step right
// after it once had a p99 of 624 ms at 70%.
func soakCapacity(t *testing.T, tg *target) float64 {
	t.Helper()
	// The first 20 s warm the caches of a freshly opened store.
	closedLoop(tg, 32, 20*time.Second, newStats())
	closedSt := newStats()
	closed := closedLoop(tg, 32, 20*time.Second, closedSt)
	t.Logf("closed loop of 32 callers over %v: %.0f calls/s; %s%s", tg.trs, closed, closedSt, closedSt.byTool())
	openLoop(tg, closed/2, 10*time.Second, 4096, newStats())
	var refs []time.Duration
	for range 2 {
		ref := newStats()
		openLoop(tg, closed/2, 10*time.Second, 4096, ref)
		refs = append(refs, ref.p99())
	}
	knee := 3 * max(slices.Min(refs), 20*time.Millisecond)
	t.Logf("reference: %.0f calls/s, p99 %v by 10 s, knee %s", closed/2, refs, knee)
	capacity := 0.0
	for f := 0.70; f < 1.5; f += 0.05 {
		st, windows := newStats(), make([]time.Duration, 4)
		for i := range windows {
			w := newStats()
			openLoop(tg, f*closed, 5*time.Second, 4096, w)
			windows[i] = w.p99()
			st.merge(w)
		}
		held := st.transport == 0 && median(windows) <= knee
		for code := range st.codes {
			held = held && (code == "OK" || code == "RATE_LIMITED")
		}
		t.Logf("ramp: %.0f calls/s (%.0f%% of the closed loop), p99 %v by 5 s, %s, held %v", f*closed, 100*f, windows, st, held)
		if !held {
			break
		}
		capacity = f * closed
	}
	if capacity == 0 {
		t.Fatalf("the first step of the ramp, 70%% of the closed loop's %.0f calls/s, did not hold", closed)
	}
	t.Logf("capacity: %.0f calls/s", capacity)
	return capacity
}

// TestSoak (TOOLSVC_SOAK=1, `make soak`) measures capacity (soakCapacity),
// runs the tool mix over every transport at 80% of it for
// TOOLSVC_SOAK_DURATION, then at 3× capacity, then low again. Steady
// state: no errors but rate limits, no goroutine growth, RSS within 10%
// after warm-up, p99 stable (p99Drift). Overload: the excess is shed, the
// admitted calls still succeed, and the service recovers when the load
// drops.
func TestSoak(t *testing.T) {
	if os.Getenv("TOOLSVC_SOAK") == "" {
		t.Skip("soak test: set TOOLSVC_SOAK=1 (make soak) to run it")
	}
	const principals = 200
	authFile, tokens := writeAuthFile(t, principals)
	db := filepath.Join(t.TempDir(), "soak.db")
	seedSoakStore(t, db, principals, soakSeedPerPrincipal(t))
	pc := newProcConfig(t, "--db", db, "--auth-file", authFile, "--rate-limit-ceiling", "0")
	// TOOLSVC_SOAK_LOG=file keeps the service's debug log (every call,
	// every checkpoint) to tie a stall to its cause.
	if f := os.Getenv("TOOLSVC_SOAK_LOG"); f != "" {
		pc.LogLevel, pc.LogFile = "debug", f
	}
	p := pc.start(t)
	tg := &target{conn: p.dial(t), http: p.HTTP, tokens: tokens, trs: []string{trGRPC, trREST}}
	if mcpAvailable(t, p.HTTP) {
		tg.trs = append(tg.trs, trMCP)
	}
	capacity := soakCapacity(t, tg)

	steady := soakDuration(t)
	warm := min(steady/5, 2*time.Minute)
	openLoop(tg, 0.8*capacity, warm, 4096, newStats())
	g0, rss0, anon0 := metric(t, p.Metrics, "go_goroutines"), metric(t, p.Metrics, "process_resident_memory_bytes"), rssAnon(t, p)
	var p99s []time.Duration
	total := newStats()
	// The p99 of each half is logged; drift is judged on its typical
	// minute (p99Drift).
	halves := [2]*stats{newStats(), newStats()}
	for elapsed := time.Duration(0); elapsed < steady-warm; elapsed += time.Minute {
		st := newStats()
		openLoop(tg, 0.8*capacity, min(time.Minute, steady-warm-elapsed), 4096, st)
		halves[min(1, int(2*elapsed/(steady-warm)))].merge(st)
		p99s = append(p99s, st.p99())
		t.Logf("minute %d: p99 %s, %s, goroutines %.0f, RSS %.1f MiB (anonymous %.1f MiB, Go heap in use %.1f MiB)%s", len(p99s), p99s[len(p99s)-1], st,
			metric(t, p.Metrics, "go_goroutines"), metric(t, p.Metrics, "process_resident_memory_bytes")/(1<<20), rssAnon(t, p)/(1<<20),
			metric(t, p.Metrics, "go_memstats_heap_inuse_bytes")/(1<<20), st.byTool())
		total.merge(st)
	}
	g1, rss1, anon1 := metric(t, p.Metrics, "go_goroutines"), metric(t, p.Metrics, "process_resident_memory_bytes"), rssAnon(t, p)
	t.Logf("steady: %s; goroutines %.0f → %.0f; RSS %.1f → %.1f MiB, of it anonymous %.1f → %.1f MiB; p99 per minute %v",
		total, g0, g1, rss0/(1<<20), rss1/(1<<20), anon0/(1<<20), anon1/(1<<20), p99s)
	for code, n := range total.codes {
		if code != "OK" && code != "RATE_LIMITED" {
			t.Errorf("steady load: %d calls failed with %s", n, code)
		}
	}
	if total.transport > 0 {
		t.Errorf("steady load: %d transport failures", total.transport)
	}
	if g1 > g0*1.1+20 {
		t.Errorf("goroutines grew from %.0f to %.0f", g0, g1)
	}
	// Memory that leaks is anonymous. The rest of RSS is the database
	// file mapped for reads (mmap_size), which grows with the data the
	// soak adds and is the kernel's page cache to reclaim.
	if anon1 > anon0*1.1 {
		t.Errorf("anonymous RSS grew from %.1f to %.1f MiB (> 10%%)", anon0/(1<<20), anon1/(1<<20))
	}
	t.Logf("p99 of the first half %s, of the second %s", halves[0].p99(), halves[1].p99())
	if first, second, drifted := p99Drift(p99s); drifted {
		t.Errorf("p99 drifted: the typical minute of the first half had %s, of the second %s (minutes %v)", first, second, p99s)
	} else {
		t.Logf("p99 of the typical minute: %s in the first half, %s in the second", first, second)
	}

	over := newStats()
	dropped := openLoop(tg, 3*capacity, 30*time.Second, 8192, over)
	t.Logf("3× overload: %s, p99 %s, %d arrivals dropped by the client", over, over.p99(), dropped)
	if over.codes["OK"] == 0 || over.transport > over.codes["OK"]/10 {
		t.Errorf("the service collapsed under 3× overload: %s", over)
	}
	for code, n := range over.codes {
		if code != "OK" && code != "RATE_LIMITED" && code != "SHED" && code != "PROVIDER_ERROR" {
			t.Errorf("overload: %d calls failed with %s (want success, shedding or 503)", n, code)
		}
	}
	after := newStats()
	openLoop(tg, 0.5*capacity, 20*time.Second, 4096, after)
	if after.codes["SHED"] > 0 || after.transport > 0 {
		t.Errorf("no recovery after the overload: %s", after)
	}
	t.Logf("after overload: %s, p99 %s", after, after.p99())
}

// TestSlowClientsAndOversizedHeaders holds 200 slowloris connections on
// the real HTTP listener: other clients are served meanwhile, the slow
// ones are dropped after the header timeout, and a 100 KiB header is
// refused with 431.
func TestSlowClientsAndOversizedHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 10s header timeout")
	}
	p := newProcConfig(t, "--db", filepath.Join(t.TempDir(), "slow.db")).start(t)
	addr := strings.TrimPrefix(p.HTTP, "http://")
	var slow []net.Conn
	defer func() {
		for _, c := range slow {
			_ = c.Close()
		}
	}()
	for range 200 {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\nX-Slow: "))
		slow = append(slow, c)
	}
	start := time.Now()
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(p.HTTP + "/healthz")
	if err != nil {
		t.Fatalf("a normal client was not served while slow clients held connections: %v", err)
	}
	resp.Body.Close()
	t.Logf("normal request served in %s beside 200 slow clients", time.Since(start))

	big, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, p.HTTP+"/healthz", nil)
	big.Header.Set("X-Big", strings.Repeat("a", 100<<10))
	resp, err = (&http.Client{Timeout: 5 * time.Second}).Do(big)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("100 KiB header: HTTP %d, want 431", resp.StatusCode)
	}

	dropped := 0
	deadline := time.Now().Add(20 * time.Second)
	for _, c := range slow {
		_ = c.SetReadDeadline(deadline)
		if _, err := c.Read(make([]byte, 512)); err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				dropped++
			}
		} else {
			dropped++ // an error response, then close
		}
	}
	if dropped != len(slow) {
		t.Errorf("%d of %d slow clients still connected after %s", len(slow)-dropped, len(slow), time.Since(start).Round(time.Second))
	}
}
