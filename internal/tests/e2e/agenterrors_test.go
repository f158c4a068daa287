package e2e

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// transports returns the three transports, each on a server of its own
// built with opts.
func transports(t *testing.T, opts testserver.Options) []Transport {
	t.Helper()
	return []Transport{
		GRPC{S: testserver.New(t, opts)},
		REST{S: testserver.New(t, opts)},
		MCP{S: testserver.New(t, opts)},
	}
}

// hintsOf returns the agent hints and metadata of a failed call, after
// checking the REST error envelope (docs/REST.md, Errors) fields of the ToolError.
func hintsOf(t *testing.T, tr Transport, o Outcome) (hints, md map[string]any) {
	t.Helper()
	if o.Error["success"] != false || o.Error["errorCode"] != o.Code {
		t.Errorf("%s: %s error: success %v, errorCode %v; want false, %s", tr.Name(), o.Code, o.Error["success"], o.Error["errorCode"], o.Code)
	}
	hints, _ = o.Error["agentHints"].(map[string]any)
	md, _ = o.Error["metadata"].(map[string]any)
	if hints == nil || md == nil {
		t.Fatalf("%s: %s error without agentHints or metadata: %v", tr.Name(), o.Code, o.Error)
	}
	if c, _ := hints["confidence"].(float64); c <= 0 || c > 1 {
		t.Errorf("%s: %s hints confidence %v, want in (0, 1]", tr.Name(), o.Code, hints["confidence"])
	}
	if hints["reasoning"] == "" || hints["estimatedImpact"] == nil {
		t.Errorf("%s: %s hints without reasoning or estimated impact: %v", tr.Name(), o.Code, hints)
	}
	if md["timestamp"] == nil || md["traceId"] != o.Error["traceId"] {
		t.Errorf("%s: %s metadata = %v, want a timestamp and the error's trace id", tr.Name(), o.Code, md)
	}
	return hints, md
}

// suggests returns the first suggested action named action (and of
// category, when one is given), or nil.
func suggests(hints map[string]any, action string, category ...string) map[string]any {
	list, _ := hints["suggestedNextActions"].([]any)
	for _, a := range list {
		if m, _ := a.(map[string]any); m["action"] == action && (len(category) == 0 || m["category"] == category[0]) {
			return m
		}
	}
	return nil
}

// TestErrorsCarryHintsOnEveryTransport: a validation error, a NOT_FOUND, a
// RATE_LIMITED and a TIMEOUT each carry agent hints and metadata an agent
// can act on, alike on gRPC, REST and MCP; REST's body also reads as the
// REST error envelope of docs/REST.md (REST.Call checks it on every error).
func TestErrorsCarryHintsOnEveryTransport(t *testing.T) {
	authFile, key := uniqueTenantKey(t)
	limited := func(c *server.Config) { c.AuthFile, c.RateLimitCeiling = authFile, 3 }
	for _, tr := range transports(t, testserver.Options{Configure: limited}) {
		t.Run(tr.Name(), func(t *testing.T) {
			ctx := t.Context()
			// 1. INVALID_INPUT: the field to fix, and the tool to call again.
			o, err := tr.Call(ctx, key, "add-memory", map[string]any{"content": ""}, nil)
			if err != nil || o.Code != "INVALID_INPUT" {
				t.Fatalf("empty content = %s, %v; want INVALID_INPUT", o.Code, err)
			}
			h, md := hintsOf(t, tr, o)
			if suggests(h, "add-memory", "correction") == nil {
				t.Errorf("validation hints do not suggest correcting add-memory: %v", h["suggestedNextActions"])
			}
			if w, _ := h["warnings"].([]any); len(w) == 0 {
				t.Errorf("validation hints without a warning naming the field: %v", h)
			}
			if md["tool"] != "add-memory" || md["toolVersion"] == "" {
				t.Errorf("validation metadata = %v, want tool add-memory and its version", md)
			}
			// 2. NOT_FOUND: the tool to call instead.
			o, err = tr.Call(ctx, key, "show-knowledge", map[string]any{"id": "adr-999"}, nil)
			if err != nil || o.Code != "NOT_FOUND" {
				t.Fatalf("show-knowledge adr-999 = %s, %v; want NOT_FOUND", o.Code, err)
			}
			h, _ = hintsOf(t, tr, o)
			if a := suggests(h, "query-knowledge"); a == nil {
				t.Errorf("NOT_FOUND hints do not suggest query-knowledge: %v", h["suggestedNextActions"])
			}
			// 3. RATE_LIMITED (the ceiling is 3 calls a minute): when to
			// retry, and that it is safe.
			for range 2 {
				o, err = tr.Call(ctx, key, "get-sync-status", map[string]any{}, nil)
			}
			if err != nil || o.Code != "RATE_LIMITED" {
				t.Fatalf("4th call = %s, %v; want RATE_LIMITED", o.Code, err)
			}
			h, _ = hintsOf(t, tr, o)
			a := suggests(h, "get-sync-status")
			if a == nil {
				t.Fatalf("RATE_LIMITED hints do not suggest retrying: %v", h["suggestedNextActions"])
			}
			if d, _ := a["data"].(map[string]any); d["retryAfterSeconds"] == nil {
				t.Errorf("RATE_LIMITED retry suggestion without retryAfterSeconds: %v", a)
			}
		})
	}
}

// TestTimeoutHintsSayWhetherRetryIsSafe: after a TIMEOUT, a query suggests
// a narrower request; add-memory, which may have stored the memory, is not
// retryable without an idempotency key and says so, and is with one.
func TestTimeoutHintsSayWhetherRetryIsSafe(t *testing.T) {
	authFile, key := uniqueTenantKey(t)
	instant := func(c *server.Config) {
		c.AuthFile = authFile
		c.Chain.Deadlines = interceptors.Deadlines{Fast: time.Nanosecond, Medium: time.Nanosecond, Slow: time.Nanosecond}
	}
	for _, tr := range transports(t, testserver.Options{Configure: instant}) {
		t.Run(tr.Name(), func(t *testing.T) {
			ctx := t.Context()
			o, err := tr.Call(ctx, key, "search-memories", map[string]any{"query": "deploys"}, nil)
			if err != nil || o.Code != "TIMEOUT" {
				t.Fatalf("search-memories = %s, %v; want TIMEOUT", o.Code, err)
			}
			h, _ := hintsOf(t, tr, o)
			if suggests(h, "search-memories", "optimization") == nil {
				t.Errorf("query TIMEOUT hints do not suggest a narrower request: %v", h["suggestedNextActions"])
			}
			if o.Error["retryable"] != true {
				t.Errorf("query TIMEOUT retryable = %v, want true", o.Error["retryable"])
			}

			o, err = tr.Call(ctx, key, "add-memory", map[string]any{"content": "timeouts"}, nil)
			if err != nil || o.Code != "TIMEOUT" {
				t.Fatalf("add-memory = %s, %v; want TIMEOUT", o.Code, err)
			}
			h, _ = hintsOf(t, tr, o)
			if o.Error["retryable"] != false {
				t.Errorf("add-memory TIMEOUT without a key: retryable %v, want false", o.Error["retryable"])
			}
			if r, _ := h["riskFactors"].([]any); len(r) == 0 {
				t.Errorf("add-memory TIMEOUT hints do not name the duplicate risk: %v", h)
			}

			o, err = tr.Call(ctx, key, "add-memory", map[string]any{"content": "timeouts"}, map[string]string{"Idempotency-Key": "k-" + tr.Name()})
			if err != nil || o.Code != "TIMEOUT" {
				t.Fatalf("keyed add-memory = %s, %v; want TIMEOUT", o.Code, err)
			}
			h, md := hintsOf(t, tr, o)
			if o.Error["retryable"] != true || suggests(h, "add-memory") == nil {
				t.Errorf("keyed add-memory TIMEOUT: retryable %v, hints %v; want retryable with a retry suggestion",
					o.Error["retryable"], h["suggestedNextActions"])
			}
			if md["idempotencyKey"] != "k-"+tr.Name() {
				t.Errorf("metadata idempotencyKey = %v", md["idempotencyKey"])
			}
		})
	}
}

// TestIdempotencyKeys: on both stores and the three transports (MCP also
// with the key in _meta, as over stdio), an add-memory retried with the
// same key stores one memory and answers the first result as a replay;
// concurrent duplicates run once; the key with other arguments is CONFLICT;
// an expired key runs the tool again.
func TestIdempotencyKeys(t *testing.T) {
	backends := []string{testserver.SQLite}
	if os.Getenv("TOOLSVC_TEST_POSTGRES") != "" {
		backends = append(backends, testserver.Postgres)
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			authFile, key := uniqueTenantKey(t)
			opts := testserver.Options{Backend: backend, Configure: func(c *server.Config) {
				c.AuthFile, c.Chain.IdempotencyTTL = authFile, 2*time.Second
			}}
			trs := transports(t, opts)
			trs = append(trs, MCP{S: trs[2].(MCP).S, MetaKey: true})
			for i, tr := range trs {
				name := tr.Name()
				if i == 3 {
					name = "mcp-meta"
				}
				t.Run(name, func(t *testing.T) {
					idempotencyScenario(t, tr, key, fmt.Sprintf("%s-%s-%d", backend, name, time.Now().UnixNano()))
				})
			}
		})
	}
}

func idempotencyScenario(t *testing.T, tr Transport, token, run string) {
	ctx := t.Context()
	content := "Release trains leave on Thursdays " + run
	args := map[string]any{"content": content}
	keyed := map[string]string{"Idempotency-Key": "key-" + run}
	memoryID := func(o Outcome) string {
		d, _ := o.Result["data"].(map[string]any)
		id, _ := d["memoryId"].(string)
		return id
	}
	first, err := tr.Call(ctx, token, "add-memory", args, keyed)
	if err != nil || first.Code != "OK" {
		t.Fatalf("first call = %s, %v %v", first.Code, err, first.Error)
	}
	again, err := tr.Call(ctx, token, "add-memory", args, keyed)
	if err != nil || again.Code != "OK" {
		t.Fatalf("retry = %s, %v %v", again.Code, err, again.Error)
	}
	if memoryID(first) == "" || memoryID(again) != memoryID(first) {
		t.Errorf("retry stored memory %q, first %q; want the same", memoryID(again), memoryID(first))
	}
	if md, _ := again.Result["metadata"].(map[string]any); md["replayed"] != true {
		t.Errorf("retry metadata = %v, want replayed true", md)
	}
	if md, _ := first.Result["metadata"].(map[string]any); md["replayed"] == true {
		t.Errorf("first call metadata says replayed")
	}
	// The same key with other arguments is refused, and not retryable.
	other, err := tr.Call(ctx, token, "add-memory", map[string]any{"content": content + " (edited)"}, keyed)
	if err != nil || other.Code != "CONFLICT" || other.Error["retryable"] != false {
		t.Errorf("key reused with other arguments = %s (retryable %v), %v; want CONFLICT, not retryable", other.Code, other.Error["retryable"], err)
	}
	// Concurrent duplicates with a new key run the tool once.
	dupKey := map[string]string{"Idempotency-Key": "dup-" + run}
	dupArgs := map[string]any{"content": content + " (concurrent)"}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids = map[string]int{}
	)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := tr.Call(ctx, token, "add-memory", dupArgs, dupKey)
			if err != nil || o.Code != "OK" {
				t.Errorf("concurrent duplicate = %s, %v %v", o.Code, err, o.Error)
				return
			}
			mu.Lock()
			ids[memoryID(o)]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(ids) != 1 {
		t.Errorf("6 concurrent duplicates stored %d memories (%v), want 1", len(ids), ids)
	}
	if n := countMemories(t, tr, token, content); n != 2 {
		t.Errorf("memories stored = %d, want 2 (one per key)", n)
	}
	// Keys expire (TTL 2 s): the same key then runs the tool again.
	time.Sleep(2100 * time.Millisecond)
	late, err := tr.Call(ctx, token, "add-memory", args, keyed)
	if err != nil || late.Code != "OK" || memoryID(late) == memoryID(first) {
		t.Errorf("call after the key expired = %s %q, %v; want a new memory", late.Code, memoryID(late), err)
	}
}

// countMemories counts the caller's memories whose content contains text.
func countMemories(t *testing.T, tr Transport, token, text string) int {
	t.Helper()
	o, err := tr.Call(t.Context(), token, "search-memories", map[string]any{"query": text, "limit": 50, "threshold": 0}, nil)
	if err != nil || o.Code != "OK" {
		t.Fatalf("search-memories = %s, %v %v", o.Code, err, o.Error)
	}
	d, _ := o.Result["data"].(map[string]any)
	results, _ := d["results"].([]any)
	n := 0
	for _, r := range results {
		m, _ := r.(map[string]any)
		if c, _ := m["content"].(string); len(c) >= len(text) && c[:len(text)] == text {
			n++
		}
	}
	return n
}
