package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// Governance (docs/OPERATIONS.md "Governance"): budgets, result caps and
// reloading the auth file, on every transport.

// writeAuthFile writes body to path as kubelet and editors do: a new file
// renamed over the old one, so a reader never sees half of it.
func writeAuthFile(t *testing.T, path, body string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// keyYAML is one API key entry of tenant with every permission.
func keyYAML(key, subject, tenant string) string {
	return fmt.Sprintf("  - key_sha256: %q\n    subject: %s\n    tenant: %s\n    permissions: [\"*\"]\n    identifiers: {user_id: u1, org_id: o1, team_id: %s-team, project_id: p1}\n",
		auth.HashKey(key), subject, tenant, tenant)
}

// uniqueName is a name no other test or run uses (shared Redis counters).
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s%x", prefix, time.Now().UnixNano())
}

// alignToWindow waits for the start of the next window of length w, so
// that a test's calls all fall in one window.
func alignToWindow(w time.Duration) time.Time {
	now := time.Now()
	start := now.Truncate(w).Add(w)
	time.Sleep(time.Until(start) + 20*time.Millisecond)
	return start
}

func allTransports(s *testserver.Server) []Transport {
	return []Transport{GRPC{S: s}, REST{S: s}, MCP{S: s}, MCP{S: s, Modern: true}}
}

func suggestedActions(te map[string]any) []map[string]any {
	h, _ := te["agentHints"].(map[string]any)
	raw, _ := h["suggestedNextActions"].([]any)
	var out []map[string]any
	for _, a := range raw {
		if m, ok := a.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// TestBudgetSpentOnEveryTransport: a key's budget of 3 units admits exactly
// 3 calls of a tool without a declared cost (default_cost 1) on gRPC, REST
// and MCP (both revisions); the 4th is RATE_LIMITED with retryAfter at the
// window's end and a hint naming the budget and no other tenant; at the
// window's end the budget is whole again. The refusal is audited.
func TestBudgetSpentOnEveryTransport(t *testing.T) {
	dir := t.TempDir()
	authFile := filepath.Join(dir, "auth.yaml")
	body := "api_keys:\n"
	names := []string{"grpc", "rest", "mcp", "mcp-2026"}
	for _, n := range names {
		body += keyYAML("tsk_budget_"+n+"_0123456789", "caller-"+n, "acme")
	}
	body += keyYAML("tsk_budget_other_0123456789", "other", "globex")
	const window = 3 * time.Second
	body += "budgets:\n  default_cost: 1\n  limits:\n    - {name: per-key-small, per: key, units: 3, window: 3s}\n    - {name: globex-daily, per: tenant, match: globex, units: 100000, window: 24h}\n"
	writeAuthFile(t, authFile, body)
	s := testserver.New(t, testserver.Options{Configure: func(c *server.Config) { c.AuthFile = authFile }})
	ctx := context.Background()
	end := alignToWindow(window).Add(window)
	var wg sync.WaitGroup
	for i, tr := range allTransports(s) {
		key := "tsk_budget_" + names[i] + "_0123456789"
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 3 {
				if o, err := tr.Call(ctx, key, "get-sync-status", map[string]any{}, nil); err != nil || o.Code != "OK" {
					t.Errorf("%s: call %d: %v %v %v", tr.Name(), n+1, o.Code, o.Error, err)
					return
				}
			}
			o, err := tr.Call(ctx, key, "get-sync-status", map[string]any{}, nil)
			if err != nil || o.Code != "RATE_LIMITED" {
				t.Errorf("%s: 4th call: %v %v, want RATE_LIMITED", tr.Name(), o.Code, err)
				return
			}
			msg, _ := o.Error["message"].(string)
			if !strings.Contains(msg, `budget "per-key-small"`) || strings.Contains(msg, "globex") {
				t.Errorf("%s: message %q: want the budget named and no other tenant", tr.Name(), msg)
			}
			retry, _ := o.Error["retryAfterSeconds"].(float64)
			if want := time.Until(end).Seconds(); retry <= 0 || retry > want+0.5 || retry < want-1 {
				t.Errorf("%s: retryAfterSeconds %v, want about %.2f (the window's end)", tr.Name(), retry, want)
			}
			if d, _ := o.Error["details"].(map[string]any); d["budget"] != "per-key-small" {
				t.Errorf("%s: details %v", tr.Name(), o.Error["details"])
			}
			found := false
			for _, a := range suggestedActions(o.Error) {
				if d, _ := a["description"].(string); strings.Contains(d, "per-key-small") {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no hint names the budget: %v", tr.Name(), o.Error["agentHints"])
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// explain names the spent budget as the rule that refuses the next call.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.HTTP+"/v1/policy/explain?subject=caller-grpc&tool=get-sync-status", nil)
	req.Header.Set("Authorization", "Bearer tsk_budget_other_0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ex struct {
		Callers []struct {
			Tool struct {
				Allowed bool   `json:"allowed"`
				Rule    string `json:"rule"`
				Code    string `json:"code"`
			} `json:"tool"`
			Budgets []struct {
				Name      string `json:"name"`
				Limit     int64  `json:"limit"`
				Remaining int64  `json:"remaining"`
				Refuses   bool   `json:"refuses"`
			} `json:"budgets"`
		} `json:"callers"`
	}
	err = json.NewDecoder(resp.Body).Decode(&ex)
	resp.Body.Close()
	if time.Now().Before(end) { // the window has not renewed meanwhile
		if err != nil || len(ex.Callers) != 1 || len(ex.Callers[0].Budgets) != 1 {
			t.Fatalf("explain: HTTP %d %v %+v", resp.StatusCode, err, ex)
		}
		c := ex.Callers[0]
		if c.Tool.Allowed || c.Tool.Rule != "budget" || c.Tool.Code != "RATE_LIMITED" {
			t.Errorf("explain's verdict %+v, want refused by rule budget (RATE_LIMITED)", c.Tool)
		}
		if b := c.Budgets[0]; b.Name != "per-key-small" || b.Limit != 3 || b.Remaining != 0 || !b.Refuses {
			t.Errorf("explain's budget %+v, want per-key-small with 0 of 3 left, refusing", b)
		}
	}
	time.Sleep(time.Until(end) + 50*time.Millisecond)
	for i, tr := range allTransports(s) {
		if o, err := tr.Call(ctx, "tsk_budget_"+names[i]+"_0123456789", "get-sync-status", map[string]any{}, nil); err != nil || o.Code != "OK" {
			t.Errorf("%s: after the window's end: %v %v", tr.Name(), o.Code, err)
		}
	}
	// Every refusal is audited with the budget as its reason.
	waitFor(t, 5*time.Second, func() bool {
		events, _, err := s.Store().ListAudit(ctx, store.AuditFilter{Tenant: "acme", Decision: "deny", Limit: 100})
		if err != nil {
			return false
		}
		n := 0
		for _, e := range events {
			if e.Decision == "deny" && strings.HasPrefix(e.Reason, "budget: per-key-small spent") {
				n++
			}
		}
		return n == len(names)
	}, "4 audited budget refusals")
}

// TestBudgetSharedAcrossReplicas: two replicas sharing PostgreSQL and
// Redis admit exactly a tenant's budget between them under concurrent
// callers, and the budget is whole again at the window's end. The
// remaining units show on the operator view and in /metrics.
func TestBudgetSharedAcrossReplicas(t *testing.T) {
	redisURL := os.Getenv("TOOLSVC_TEST_REDIS")
	if redisURL == "" {
		t.Skip("TOOLSVC_TEST_REDIS is not set; run the tests with `make test`, which sets it")
	}
	dsn := testserver.PostgresDSN(t)
	tenant := uniqueName("t")
	authFile := filepath.Join(t.TempDir(), "auth.yaml")
	const key = "tsk_budget_replicas_0123456789"
	writeAuthFile(t, authFile, "api_keys:\n"+keyYAML(key, "shared", tenant)+
		"budgets:\n  limits:\n    - {name: tenant-window, per: tenant, units: 6, window: 4s}\n")
	cfg := func(c *server.Config) {
		c.AuthFile, c.Redis, c.DB, c.RedisTimeout = authFile, redisURL, dsn, 5*time.Second
		c.RedisKeyPrefix = "toolsvc-test:" + tenant + ":"
	}
	a := testserver.New(t, testserver.Options{Configure: cfg})
	b := testserver.New(t, testserver.Options{Configure: cfg})
	replicas := []Transport{GRPC{S: a}, REST{S: b}, MCP{S: a}, GRPC{S: b}, MCP{S: b, Modern: true}, REST{S: a}}
	ctx := context.Background()
	end := alignToWindow(4 * time.Second).Add(4 * time.Second)
	const calls = 16
	var (
		mu    sync.Mutex
		codes = map[string]int{}
		wg    sync.WaitGroup
	)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := replicas[i%len(replicas)].Call(ctx, key, "get-sync-status", map[string]any{}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			codes[o.Code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes["OK"] != 6 || codes["RATE_LIMITED"] != calls-6 {
		t.Fatalf("outcomes %v: want exactly 6 OK and %d RATE_LIMITED across both replicas", codes, calls-6)
	}
	view := operatorView(t, a, key)
	budgets, _ := view["budgets"].([]any)
	if len(budgets) != 1 || budgets[0].(map[string]any)["remaining"] != float64(0) || budgets[0].(map[string]any)["whose"] != tenant {
		t.Errorf("operator view budgets %v: want tenant-window with 0 remaining", view["budgets"])
	}
	if m := metricsText(t, b, key); !strings.Contains(m, fmt.Sprintf(`toolsvc_budget_remaining_units{budget="tenant-window",whose=%q} 0`, tenant)) {
		t.Errorf("metrics lack the remaining units of the budget")
	}
	time.Sleep(time.Until(end) + 50*time.Millisecond)
	for _, tr := range []Transport{GRPC{S: a}, REST{S: b}} {
		if o, err := tr.Call(ctx, key, "get-sync-status", map[string]any{}, nil); err != nil || o.Code != "OK" {
			t.Errorf("after the window's end on %s: %v %v", tr.Name(), o.Code, err)
		}
	}
}

// TestResultOverCapRefusedWithHint: a result over its tool's cap is not
// sent: INVALID_INPUT on every transport, with a hint naming how to ask
// for less (the tool's own limit field when it has one).
func TestResultOverCapRefusedWithHint(t *testing.T) {
	c := testserver.WriteCredentials(t)
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) {
		cfg.AuthFile = c.AuthFile
		cfg.ToolMaxResultBytes = map[string]int{"get-sync-status": 64, "search-memories": 64}
	}})
	ctx := context.Background()
	for _, tr := range allTransports(s) {
		for _, tc := range []struct {
			tool string
			args map[string]any
			hint string
		}{
			{"get-sync-status", map[string]any{}, "narrower arguments"},
			{"search-memories", map[string]any{"query": "deploys"}, `smaller "limit"`},
		} {
			o, err := tr.Call(ctx, c.Full, tc.tool, tc.args, nil)
			if err != nil || o.Code != "INVALID_INPUT" {
				t.Errorf("%s %s: %v %v, want INVALID_INPUT", tr.Name(), tc.tool, o.Code, err)
				continue
			}
			msg, _ := o.Error["message"].(string)
			d, _ := o.Error["details"].(map[string]any)
			if !strings.Contains(msg, "cap of 64 bytes") || !strings.Contains(msg, tc.hint) || d["reason"] != "result_too_large" {
				t.Errorf("%s %s: %q %v", tr.Name(), tc.tool, msg, d)
			}
			if acts := suggestedActions(o.Error); len(acts) == 0 || acts[0]["action"] != tc.tool {
				t.Errorf("%s %s: hints %v: want the tool suggested again with less", tr.Name(), tc.tool, acts)
			}
		}
		// A tool without a cap of its own is served (the global 4 MiB).
		if o, err := tr.Call(ctx, c.Full, "query-knowledge", map[string]any{"query": "deploy"}, nil); err != nil || o.Code != "OK" {
			t.Errorf("%s query-knowledge: %v %v", tr.Name(), o.Code, err)
		}
	}
}

// TestKeyRevokedByEditingTheFile: on two replicas watching their auth
// file, a key removed from it is refused on every transport within the
// stated bound (--auth-poll plus a call), its 2025 MCP event stream and
// its subscriptions/listen stream end, a key kept works throughout, and a
// bad file keeps the running policy and says why (operator view, metric).
func TestKeyRevokedByEditingTheFile(t *testing.T) {
	for _, backend := range []string{testserver.SQLite, testserver.Postgres} {
		t.Run(backend, func(t *testing.T) {
			testKeyRevoked(t, backend)
		})
	}
}

func testKeyRevoked(t *testing.T, backend string) {
	const (
		keep   = "tsk_reload_keep_0123456789"
		revoke = "tsk_reload_revoke_0123456789"
		poll   = 200 * time.Millisecond
		bound  = 2 * time.Second // poll + reading and swapping, with room for a loaded machine
	)
	// roled holds sync:read only through the role syncer, which the edit
	// lowers to memory:read: a role revoked by editing the file.
	const roled = "tsk_reload_roled_0123456789"
	roledYAML := fmt.Sprintf("  - key_sha256: %q\n    subject: roled\n    tenant: acme\n    roles: [syncer]\n", auth.HashKey(roled))
	role := func(perm string) string { return "roles:\n  - name: syncer\n    permissions: [\"" + perm + "\"]\n" }
	authFile := filepath.Join(t.TempDir(), "auth.yaml")
	writeAuthFile(t, authFile, role("sync:read")+"api_keys:\n"+keyYAML(keep, "keep", "acme")+keyYAML(revoke, "revoke", "acme")+roledYAML)
	configure := func(c *server.Config) { c.AuthFile, c.AuthPoll = authFile, poll }
	opts := testserver.Options{Configure: configure}
	if backend == testserver.Postgres {
		redisURL := os.Getenv("TOOLSVC_TEST_REDIS")
		if redisURL == "" {
			t.Skip("TOOLSVC_TEST_REDIS is not set; run the tests with `make test`, which sets it")
		}
		dsn := testserver.PostgresDSN(t)
		prefix := uniqueName("toolsvc-test:reload") + ":"
		opts = testserver.Options{Backend: backend, Configure: func(c *server.Config) {
			configure(c)
			c.DB, c.Redis, c.RedisKeyPrefix = dsn, redisURL, prefix
		}}
	}
	a := testserver.New(t, opts)
	b := testserver.New(t, opts)
	var everywhere []Transport
	for _, s := range []*testserver.Server{a, b} {
		everywhere = append(everywhere, allTransports(s)...)
	}
	ctx := context.Background()
	for _, tr := range everywhere {
		for _, k := range []string{keep, revoke, roled} {
			if o, err := tr.Call(ctx, k, "get-sync-status", map[string]any{}, nil); err != nil || o.Code != "OK" {
				t.Fatalf("%s before the edit: %v %v", tr.Name(), o.Code, err)
			}
		}
	}
	stream := open2025Stream(t, a, revoke)
	listen := openListen(t, b, revoke)

	edited := time.Now()
	writeAuthFile(t, authFile, role("memory:read")+"api_keys:\n"+keyYAML(keep, "keep", "acme")+roledYAML)
	waitFor(t, bound, func() bool {
		for _, tr := range everywhere {
			if o, err := tr.Call(ctx, revoke, "get-sync-status", map[string]any{}, nil); err != nil || o.Code != "UNAUTHORIZED" {
				return false
			}
			// The role no longer grants sync:read: the tool is not there
			// for roled, as for any caller without its permission.
			if o, err := tr.Call(ctx, roled, "get-sync-status", map[string]any{}, nil); err != nil || o.Code != "NOT_FOUND" {
				return false
			}
		}
		return true
	}, "the revoked key refused and the lowered role's tool gone on every transport of both replicas")
	t.Logf("revoked everywhere %v after the edit (poll %v, bound %v)", time.Since(edited).Round(time.Millisecond), poll, bound)
	select {
	case <-stream:
	case <-time.After(bound):
		t.Error("the revoked key's 2025 event stream is still open")
	}
	select {
	case final := <-listen:
		if !strings.Contains(final, `"id":7`) {
			t.Errorf("listen stream ended without its response: %q", final)
		}
	case <-time.After(bound):
		t.Error("the revoked key's listen stream is still open")
	}
	for _, tr := range everywhere {
		if o, err := tr.Call(ctx, keep, "get-sync-status", map[string]any{}, nil); err != nil || o.Code != "OK" {
			t.Errorf("%s: the kept key: %v %v", tr.Name(), o.Code, err)
		}
	}

	// A bad file: the running policy stays, and says why.
	writeAuthFile(t, authFile, "api_keys:\n  - subject: nobody\n")
	for _, s := range []*testserver.Server{a, b} {
		waitFor(t, bound, func() bool {
			st, _ := operatorView(t, s, keep)["auth"].(map[string]any)
			e, _ := st["lastError"].(string)
			return strings.Contains(e, "tenant is required")
		}, "the operator view saying why the file was refused")
		if m := metricsText(t, s, keep); !strings.Contains(m, "toolsvc_auth_reload_failing 1") ||
			!strings.Contains(m, `toolsvc_auth_reloads_total{result="error"} 1`) {
			t.Error("metrics do not show the failed reload")
		}
	}
	for _, tr := range everywhere {
		if o, err := tr.Call(ctx, keep, "get-sync-status", map[string]any{}, nil); err != nil || o.Code != "OK" {
			t.Errorf("%s: the kept key after a bad file: %v %v", tr.Name(), o.Code, err)
		}
		if o, _ := tr.Call(ctx, revoke, "get-sync-status", map[string]any{}, nil); o.Code != "UNAUTHORIZED" {
			t.Errorf("%s: a bad file brought back a revoked key: %v", tr.Name(), o.Code)
		}
	}
}

// open2025Stream opens a 2025 session of key and its GET event stream; the
// channel closes when the server ends the stream.
func open2025Stream(t *testing.T, s *testserver.Server, key string) <-chan struct{} {
	t.Helper()
	post := func(sid, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, s.HTTP+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: HTTP %d without a session", resp.StatusCode)
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	req, _ := http.NewRequest(http.MethodGet, s.HTTP+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	get, err := http.DefaultClient.Do(req)
	if err != nil || get.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", get, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer get.Body.Close()
		_, _ = io.Copy(io.Discard, get.Body)
	}()
	return done
}

// openListen opens a 2026-07-28 subscriptions/listen stream of key; the
// channel gets the stream's last line when the server ends it.
func openListen(t *testing.T, s *testserver.Server, key string) <-chan string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, s.HTTP+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("listen: %v %v", resp, err)
	}
	acked := make(chan struct{})
	out := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		last, once := "", sync.Once{}
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data:") {
				last = line
				if strings.Contains(line, "acknowledged") {
					once.Do(func() { close(acked) })
				}
			}
		}
		once.Do(func() { close(acked) })
		out <- last
	}()
	select {
	case <-acked:
	case <-time.After(5 * time.Second):
		t.Fatal("listen: no acknowledgment")
	}
	return out
}

func operatorView(t *testing.T, s *testserver.Server, key string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.HTTP+"/healthz?view=operator", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("operator view: HTTP %d %v", resp.StatusCode, err)
	}
	return out
}

func metricsText(t *testing.T, s *testserver.Server, key string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.HTTP+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func waitFor(t *testing.T, d time.Duration, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
