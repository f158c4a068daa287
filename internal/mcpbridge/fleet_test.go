package mcpbridge_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"github.com/toolsvc/toolsvc/internal/base/mcptask"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// fleet configures replicas of one fleet: one PostgreSQL schema, one
// Redis under a key prefix of this test's own, a short task lease.
func fleet(t *testing.T) func(*server.Config) {
	t.Helper()
	redisURL := os.Getenv("TOOLSVC_TEST_REDIS")
	if redisURL == "" {
		t.Skip("TOOLSVC_TEST_REDIS is not set; run the tests with `make test`, which sets it")
	}
	dsn := testserver.PostgresDSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "test:" + hex.EncodeToString(b[:]) + ":"
	return func(c *server.Config) {
		c.DB, c.Redis, c.RedisKeyPrefix, c.RedisTimeout = dsn, redisURL, prefix, 5*time.Second
		c.MCP.TaskLease = time.Second
	}
}

// gatedServices are the builtin services with sync-knowledge gated by g.
func gatedServices(g *gatedSync) server.ServicesFunc {
	return func(ctx context.Context, d server.Deps) ([]registry.Service, func(), error) {
		svcs, cleanup, err := server.Builtin(ctx, d)
		for i := range svcs {
			if real, ok := svcs[i].Impl.(syncv1.SyncServiceServer); ok && svcs[i].Desc == &syncv1.SyncService_ServiceDesc {
				g.SyncServiceServer = real
				svcs[i].Impl = g
			}
		}
		return svcs, cleanup, err
	}
}

func newGate() *gatedSync {
	return &gatedSync{started: make(chan struct{}, 8), release: make(chan struct{}), cancelled: make(chan struct{}, 8)}
}

// until retries check until it holds, for at most 10s: what one replica
// tells another through Redis pub/sub arrives within milliseconds, but
// not within the request that caused it.
func until(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// do sends req and returns its status, the body read and closed.
func do(req *http.Request) (int, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// httpStatus posts body as c and returns the HTTP status and body.
func httpStatus(c *client, body string, h http.Header) (int, []byte) {
	resp, b := c.post(body, h)
	return resp.StatusCode, b
}

// TestSessionOnEveryReplica: a 2025-11-25 session opened on replica A is
// used on replica B (tools/call); its log level set on B holds on A; another
// principal cannot use it on either; DELETE on B ends it on A too; a GET
// event stream on B hears notifications/tools/list_changed of a registry
// swap on A.
func TestSessionOnEveryReplica(t *testing.T) {
	t.Parallel()
	cfg := fleet(t)
	a := newAuthServer(t, cfg)
	b := newAuthServer(t, cfg)
	c := newClient(t, a.HTTP)
	c.header.Set("Authorization", "Bearer "+keyAll)
	c.initialize("fleet-client")

	c.url = b.HTTP + "/mcp"
	var res toolResult
	c.result("tools/call", map[string]any{"name": "get-sync-status", "arguments": map[string]any{}}, &res)
	if res.IsError {
		t.Fatalf("tools/call on B of A's session: %+v", res)
	}

	// The stream of B hears a change of A's tool set.
	req, _ := http.NewRequest(http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+keyAll)
	req.Header.Set("Mcp-Session-Id", c.session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	if line, err := events.ReadString('\n'); err != nil || !strings.HasPrefix(line, ":") {
		t.Fatalf("B's stream starts with %q, %v (HTTP %d)", line, err, resp.StatusCode)
	}
	if err := a.MCP().SetRegistry(a.Registry()); err != nil {
		t.Fatal(err)
	}
	for {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("B's event stream ended before list_changed: %v", err)
		}
		if strings.Contains(line, "notifications/tools/list_changed") {
			break
		}
	}

	// logging/setLevel on B: A's answers carry log messages from then on.
	var empty map[string]any
	c.result("logging/setLevel", map[string]any{"level": "debug"}, &empty)
	c.url = a.HTTP + "/mcp"
	call := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"sync-knowledge","arguments":{}}}`
	until(t, "A sends the log messages B's setLevel asked for", func() bool {
		resp, body := c.post(call, http.Header{"Accept": {"text/event-stream"}})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/call on A: HTTP %d %s", resp.StatusCode, body)
		}
		for _, m := range decodeMessages(t, resp.Header.Get("Content-Type"), body) {
			if m.Method == "notifications/message" {
				return true
			}
		}
		return false
	})

	// Another principal (same tenant) is refused on both replicas.
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	for _, base := range []string{a.HTTP, b.HTTP} {
		o := newClient(t, base)
		o.header.Set("Authorization", "Bearer "+keyOther)
		o.session = c.session
		if code, body := httpStatus(o, ping, nil); code != http.StatusNotFound {
			t.Fatalf("another principal's use of the session on %s: HTTP %d %s, want 404", base, code, body)
		}
		del, _ := http.NewRequest(http.MethodDelete, base+"/mcp", nil)
		del.Header.Set("Authorization", "Bearer "+keyOther)
		del.Header.Set("Mcp-Session-Id", c.session)
		if code, err := do(del); err != nil || code != http.StatusNotFound {
			t.Fatalf("another principal's DELETE: %v HTTP %d, want 404", err, code)
		}
	}
	if code, body := httpStatus(c, ping, nil); code != http.StatusOK {
		t.Fatalf("the owner's session after the others' attempts: HTTP %d %s", code, body)
	}

	// DELETE on B ends it on A (which has it cached).
	del, _ := http.NewRequest(http.MethodDelete, b.HTTP+"/mcp", nil)
	del.Header.Set("Authorization", "Bearer "+keyAll)
	del.Header.Set("Mcp-Session-Id", c.session)
	if code, err := do(del); err != nil || code != http.StatusNoContent {
		t.Fatalf("DELETE on B: %v HTTP %d, want 204", err, code)
	}
	until(t, "A refuses the session deleted on B", func() bool {
		code, _ := httpStatus(c, ping, nil)
		return code == http.StatusNotFound
	})
	c.url = b.HTTP + "/mcp"
	if code, _ := httpStatus(c, ping, nil); code != http.StatusNotFound {
		t.Fatalf("B after its DELETE: HTTP %d, want 404", code)
	}
}

// startTaskOn starts sync-knowledge as a task on c's replica.
func startTaskOn(t *testing.T, c *client, g *gatedSync) taskResult {
	t.Helper()
	tk := decodeTask(t, modernCall(t, c, "1", "tools/call", "sync-knowledge", `"name":"sync-knowledge","arguments":{"force":true},`+tasksMeta))
	if tk.ResultType != "task" || tk.Status != "working" {
		t.Fatalf("creation = %+v", tk)
	}
	waitFor(t, g.started, "the task's tool call")
	return tk
}

func taskGet(t *testing.T, c *client, id string) response {
	return modernCall(t, c, "5", "tasks/get", id, `"taskId":"`+id+`",`+tasksMeta)
}

// lostError checks that a task failed with the retryable error of a
// task whose replica stopped.
func lostError(t *testing.T, tk taskResult) {
	t.Helper()
	var e struct {
		Message string `json:"message"`
		Data    struct {
			Retryable bool   `json:"retryable"`
			Reason    string `json:"reason"`
		} `json:"data"`
	}
	if tk.Status != "failed" || json.Unmarshal(tk.Error, &e) != nil || !e.Data.Retryable || e.Data.Reason != "TASK_LOST" {
		t.Fatalf("task = %+v %s, want failed, retryable, TASK_LOST", tk, tk.Error)
	}
}

// TestTaskOnEveryReplica (PostgreSQL): a task started on A is seen and
// cancelled on B (the cancel reaches A's tool call); another principal
// gets "not found" on B; A closed mid-task leaves the task failed,
// retryably, as B sees it; a task of a replica that died without a word
// is failed by B once its lease runs out.
func TestTaskOnEveryReplica(t *testing.T) {
	t.Parallel()
	cfg := fleet(t)
	ga, gb := newGate(), newGate()
	a := newAuthServerWith(t, gatedServices(ga), cfg)
	b := newAuthServerWith(t, gatedServices(gb), cfg)
	onA, onB, other := newClient(t, a.HTTP), newClient(t, b.HTTP), newClient(t, b.HTTP)
	onA.header.Set("Authorization", "Bearer "+keyAll)
	onB.header.Set("Authorization", "Bearer "+keyAll)
	other.header.Set("Authorization", "Bearer "+keyOther)

	tk := startTaskOn(t, onA, ga)
	if got := decodeTask(t, taskGet(t, onB, tk.TaskID)); got.Status != "working" {
		t.Fatalf("tasks/get on B = %+v", got)
	}
	until(t, "A's progress in the store", func() bool {
		return strings.Contains(decodeTask(t, taskGet(t, onB, tk.TaskID)).StatusMessage, "warming up")
	})
	if r := taskGet(t, other, tk.TaskID); r.Error == nil || !strings.Contains(r.Error.Message, "not found") {
		t.Fatalf("another principal's tasks/get on B = %+v", r)
	}
	if r := modernCall(t, other, "6", "tasks/cancel", tk.TaskID, `"taskId":"`+tk.TaskID+`",`+tasksMeta); r.Error == nil {
		t.Fatalf("another principal's tasks/cancel on B succeeded")
	}
	if r := modernCall(t, onB, "6", "tasks/cancel", tk.TaskID, `"taskId":"`+tk.TaskID+`",`+tasksMeta); r.Error != nil {
		t.Fatalf("tasks/cancel on B = %+v", r.Error)
	}
	waitFor(t, ga.cancelled, "B's cancel reaching the tool call on A")
	if got := pollTask(t, func() response { return taskGet(t, onB, tk.TaskID) }); got.Status != "cancelled" {
		t.Fatalf("after B's cancel: %+v", got)
	}

	// A replica that died without a word: its task's lease runs out and B
	// fails it.
	ts := b.Store().(mcptask.Store)
	now := time.Now()
	dead := &mcptask.Record{ID: "dead0000000000000000000000000001", Owner: "someone", Replica: "dead-replica",
		Status: mcptask.Working, CreatedAt: now, UpdatedAt: now, LeaseUntil: now.Add(-time.Second)}
	if ok, err := ts.CreateTask(t.Context(), dead, 16, now.Add(-time.Hour)); err != nil || !ok {
		t.Fatalf("insert a dead replica's task: %v %v", ok, err)
	}
	until(t, "B fails the dead replica's task", func() bool {
		r, err := ts.GetTask(t.Context(), dead.ID)
		return err == nil && r != nil && r.Status == "failed"
	})

	// A stops mid-task: the task ends failed, retryably, as B sees it.
	tk = startTaskOn(t, onA, ga)
	a.Close()
	lostError(t, pollTask(t, func() response { return taskGet(t, onB, tk.TaskID) }))
}

// TestTasksSurviveRestart (SQLite): a finished task is answered by the
// server restarted on the same file, and a task running at the restart
// is failed, retryably.
func TestTasksSurviveRestart(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "toolsvc.db")
	cfg := func(c *server.Config) { c.DB = db; c.MCP.TaskLease = time.Second }
	g := newGate()
	first := newAuthServerWith(t, gatedServices(g), cfg)
	c := newClient(t, first.HTTP)
	c.header.Set("Authorization", "Bearer "+keyAll)
	done := startTaskOn(t, c, g)
	g.release <- struct{}{}
	if got := pollTask(t, func() response { return taskGet(t, c, done.TaskID) }); got.Status != "completed" {
		t.Fatalf("first task = %+v", got)
	}
	running := startTaskOn(t, c, g)
	first.Close()

	second := newAuthServerWith(t, gatedServices(newGate()), cfg)
	c.url = second.HTTP + "/mcp"
	got := decodeTask(t, taskGet(t, c, done.TaskID))
	var res toolResult
	if got.Status != "completed" || json.Unmarshal(got.Result, &res) != nil || res.IsError || res.StructuredContent["data"] == nil {
		t.Fatalf("finished task after the restart = %+v %s", got, got.Result)
	}
	lostError(t, decodeTask(t, taskGet(t, c, running.TaskID)))
}
