package mcpbridge_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// tasksMeta is the _meta of a 2026-07-28 request declaring the Tasks
// extension.
const tasksMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"tasks-test","version":"1.0"},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// gatedSync is the real sync service held at its start: every
// SyncKnowledge reports progress, says it started, then waits for a
// release (and runs the real sync) or for its context to end, which it
// reports on cancelled.
type gatedSync struct {
	syncv1.SyncServiceServer
	started, release, cancelled chan struct{}
}

func (g *gatedSync) SyncKnowledge(ctx context.Context, req *syncv1.SyncKnowledgeRequest) (*syncv1.SyncKnowledgeResponse, error) {
	callctx.Progress(ctx, 1, 4, "warming up")
	g.started <- struct{}{}
	select {
	case <-g.release:
		return g.SyncServiceServer.SyncKnowledge(ctx, req)
	case <-ctx.Done():
		g.cancelled <- struct{}{}
		return nil, ctx.Err()
	}
}

// newGatedServer starts the auth server with sync-knowledge gated.
func newGatedServer(tb testing.TB) (*testserver.Server, *gatedSync) {
	tb.Helper()
	g := &gatedSync{started: make(chan struct{}, 8), release: make(chan struct{}), cancelled: make(chan struct{}, 8)}
	services := func(ctx context.Context, d server.Deps) ([]registry.Service, func(), error) {
		svcs, cleanup, err := server.Builtin(ctx, d)
		for i := range svcs {
			if real, ok := svcs[i].Impl.(syncv1.SyncServiceServer); ok && svcs[i].Desc == &syncv1.SyncService_ServiceDesc {
				g.SyncServiceServer = real
				svcs[i].Impl = g
			}
		}
		return svcs, cleanup, err
	}
	return newAuthServerWith(tb, services, nil), g
}

func waitFor(tb testing.TB, ch chan struct{}, what string) {
	tb.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		tb.Fatalf("%s: not within 10s", what)
	}
}

// taskResult is a Task as tasks/get and the creation result carry it.
type taskResult struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	CreatedAt      time.Time       `json:"createdAt"`
	LastUpdatedAt  time.Time       `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int             `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result"`
	Error          json.RawMessage `json:"error"`
}

// modernCall sends a 2026-07-28 request over HTTP with its headers (name
// is the Mcp-Name) and returns its last message.
func modernCall(tb testing.TB, c *client, id, method, name, params string) response {
	tb.Helper()
	resp, body := c.post(`{"jsonrpc":"2.0","id":`+id+`,"method":"`+method+`","params":{`+params+`}}`, modernHeaders(method, name))
	msgs := decodeMessages(tb, resp.Header.Get("Content-Type"), body)
	return msgs[len(msgs)-1]
}

func decodeTask(tb testing.TB, r response) taskResult {
	tb.Helper()
	var tk taskResult
	if r.Error != nil || json.Unmarshal(r.Result, &tk) != nil {
		tb.Fatalf("task: %+v %s", r.Error, r.Result)
	}
	return tk
}

// pollTask polls tasks/get until the task leaves working.
func pollTask(tb testing.TB, get func() response) taskResult {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tk := decodeTask(tb, get())
		if tk.Status != "working" {
			return tk
		}
		if time.Now().After(deadline) {
			tb.Fatalf("task %s still working after 10s", tk.TaskID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTaskHTTP runs sync-knowledge as a task over Streamable HTTP: the
// creation result, status and progress, the result once done; another
// principal of the same tenant gets the error of an unknown task for get
// and cancel; cancel reaches the tool's context; a client that did not
// declare the extension gets the plain result and cannot use tasks/*.
func TestTaskHTTP(t *testing.T) {
	t.Parallel()
	srv, gate := newGatedServer(t)
	owner, other := newClient(t, srv.HTTP), newClient(t, srv.HTTP)
	owner.header.Set("Authorization", "Bearer "+keyAll)
	other.header.Set("Authorization", "Bearer "+keyOther)
	start := func(id string) taskResult {
		r := modernCall(t, owner, id, "tools/call", "sync-knowledge", `"name":"sync-knowledge","arguments":{"force":true},`+tasksMeta)
		tk := decodeTask(t, r)
		if tk.ResultType != "task" || tk.Status != "working" || len(tk.TaskID) < 32 || tk.TTLMs == nil || *tk.TTLMs <= 0 || tk.PollIntervalMs <= 0 || tk.CreatedAt.IsZero() {
			t.Fatalf("creation result = %s", r.Result)
		}
		waitFor(t, gate.started, "the task's tool call")
		return tk
	}
	get := func(c *client, taskID string) response {
		return modernCall(t, c, "5", "tasks/get", taskID, `"taskId":"`+taskID+`",`+tasksMeta)
	}

	disc := modernCall(t, owner, "0", "server/discover", "", modernMeta)
	var caps struct {
		Capabilities struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(disc.Result, &caps) != nil || string(caps.Capabilities.Extensions["io.modelcontextprotocol/tasks"]) != "{}" {
		t.Fatalf("server/discover does not advertise the Tasks extension: %s", disc.Result)
	}

	owner.header.Set("X-Correlation-Id", "task-corr-1")
	tk := start("1")
	owner.header.Del("X-Correlation-Id")
	if got := decodeTask(t, get(owner, tk.TaskID)); got.ResultType != "complete" || got.Status != "working" || !strings.Contains(got.StatusMessage, "warming up") {
		t.Fatalf("tasks/get while working = %+v", got)
	}
	unknown := get(owner, "00000000000000000000000000000000")
	if unknown.Error == nil || unknown.Error.Code != mcpbridge.CodeInvalidParams {
		t.Fatalf("tasks/get of an unknown id = %+v", unknown)
	}
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		r := modernCall(t, other, "6", method, tk.TaskID, `"taskId":"`+tk.TaskID+`",`+tasksMeta)
		if r.Error == nil || r.Error.Code != unknown.Error.Code || r.Error.Message != unknown.Error.Message {
			t.Fatalf("%s by another principal = %+v %s, want the unknown-task error %+v", method, r.Error, r.Result, unknown.Error)
		}
	}
	resp, body := owner.post(`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"`+tk.TaskID+`",`+modernMeta+`}}`, modernHeaders("tasks/get", tk.TaskID))
	if r := decodeMessages(t, resp.Header.Get("Content-Type"), body)[0]; resp.StatusCode != http.StatusBadRequest || r.Error == nil || r.Error.Code != mcpbridge.CodeMissingClientCapability {
		t.Fatalf("tasks/get without the capability = HTTP %d %s", resp.StatusCode, body)
	}
	if r := modernCall(t, owner, "8", "tasks/get", "wrong", `"taskId":"`+tk.TaskID+`",`+tasksMeta); r.Error == nil || r.Error.Code != mcpbridge.CodeHeaderMismatch {
		t.Fatalf("tasks/get with an Mcp-Name of another task = %+v", r)
	}
	if r := modernCall(t, owner, "9", "tasks/update", tk.TaskID, `"taskId":"`+tk.TaskID+`","inputResponses":{"x":{}},`+tasksMeta); r.Error != nil || !strings.Contains(string(r.Result), `"resultType":"complete"`) {
		t.Fatalf("tasks/update = %+v %s", r.Error, r.Result)
	}
	// The 2025 blocking tasks/result is gone from the extension.
	if r := modernCall(t, owner, "9", "tasks/result", "", `"taskId":"`+tk.TaskID+`",`+tasksMeta); r.Error == nil || r.Error.Code != mcpbridge.CodeMethodNotFound {
		t.Fatalf("tasks/result = %+v", r)
	}
	gate.release <- struct{}{}
	done := pollTask(t, func() response { return get(owner, tk.TaskID) })
	var res struct {
		toolResult
		ResultType string `json:"resultType"`
	}
	if done.Status != "completed" || json.Unmarshal(done.Result, &res) != nil || res.IsError || res.StructuredContent["data"] == nil || res.ResultType != "complete" {
		t.Fatalf("finished task = %+v %s", done, done.Result)
	}

	// Cancel: the tool's context ends and the task says so.
	owner.header.Set("X-Correlation-Id", "task-corr-2")
	tk = start("2")
	owner.header.Del("X-Correlation-Id")
	if r := modernCall(t, owner, "10", "tasks/cancel", tk.TaskID, `"taskId":"`+tk.TaskID+`",`+tasksMeta); r.Error != nil {
		t.Fatalf("tasks/cancel = %+v", r.Error)
	}
	waitFor(t, gate.cancelled, "cancellation of the tool's context")
	if got := pollTask(t, func() response { return get(owner, tk.TaskID) }); got.Status != "cancelled" || got.Result != nil {
		t.Fatalf("cancelled task = %+v", got)
	}

	// Without the extension declared: the plain result, no task.
	go func() { gate.release <- struct{}{} }()
	r := modernCall(t, owner, "11", "tools/call", "sync-knowledge", `"name":"sync-knowledge","arguments":{},`+modernMeta)
	waitFor(t, gate.started, "the plain call")
	var plain struct {
		toolResult
		ResultType string `json:"resultType"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &plain) != nil || plain.ResultType != "complete" || plain.IsError {
		t.Fatalf("tools/call without the extension = %+v %s", r.Error, r.Result)
	}
	// The tasks are in the store, none of them running any more.
	if n := srv.MCP().Tasks(); n != 0 {
		t.Fatalf("Tasks() = %d running, want none", n)
	}

	// Both tasks' calls went through the chain: audited as MCP calls of
	// their owner, with the starting request's correlation id.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var audit struct {
			StructuredContent struct {
				Data struct {
					Events []struct {
						Subject, Transport, Decision, CorrelationID string
					} `json:"events"`
				} `json:"data"`
			} `json:"structuredContent"`
		}
		r := modernCall(t, owner, "12", "tools/call", "list-audit-events", `"name":"list-audit-events","arguments":{"tool":"sync-knowledge"},`+modernMeta)
		if r.Error != nil || json.Unmarshal(r.Result, &audit) != nil {
			t.Fatalf("list-audit-events = %+v %s", r.Error, r.Result)
		}
		seen := map[string]string{}
		for _, e := range audit.StructuredContent.Data.Events {
			if e.Subject == "agent-a" && e.Transport == "mcp" {
				seen[e.CorrelationID] = e.Decision
			}
		}
		if seen["task-corr-1"] == "allow" && seen["task-corr-2"] != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit records of the tasks' calls: %s", r.Result)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTaskDeniedByChain starts sync-knowledge as a task for a principal
// the chain does not let see it: the task fails with the very JSON-RPC
// error the synchronous call gets (the chain decided, not the bridge).
func TestTaskDeniedByChain(t *testing.T) {
	t.Parallel()
	srv := newAuthServer(t, nil)
	c := newClient(t, srv.HTTP)
	c.header.Set("Authorization", "Bearer "+keyMemory)
	sync := modernCall(t, c, "0", "tools/call", "sync-knowledge", `"name":"sync-knowledge","arguments":{},`+modernMeta)
	if sync.Error == nil {
		t.Fatalf("synchronous call = %s, want the chain's refusal", sync.Result)
	}
	tk := decodeTask(t, modernCall(t, c, "1", "tools/call", "sync-knowledge", `"name":"sync-knowledge","arguments":{},`+tasksMeta))
	if tk.ResultType != "task" {
		t.Fatalf("no task: %+v", tk)
	}
	done := pollTask(t, func() response {
		return modernCall(t, c, "2", "tasks/get", tk.TaskID, `"taskId":"`+tk.TaskID+`",`+tasksMeta)
	})
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if done.Status != "failed" || done.Result != nil || json.Unmarshal(done.Error, &e) != nil || e.Code != sync.Error.Code || e.Message != sync.Error.Message {
		t.Fatalf("denied task = %+v %s, want failed with %+v", done, done.Error, sync.Error)
	}
}

// TestTaskStdio runs the task flow over stdio with two connections of
// two principals: the other one cannot see or cancel the task, its owner
// cancels it, and a 2025-era call with the capability gets no task.
func TestTaskStdio(t *testing.T) {
	t.Parallel()
	srv, gate := newGatedServer(t)
	owner := startStdio(t, srv.MCP(), "Bearer "+keyAll)
	other := startStdio(t, srv.MCP(), "Bearer "+keyOther)

	owner.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sync-knowledge","arguments":{},` + tasksMeta + `}}`)
	tk := decodeTask(t, owner.next())
	if tk.ResultType != "task" || tk.Status != "working" {
		t.Fatalf("creation = %+v", tk)
	}
	waitFor(t, gate.started, "the task's tool call")
	for _, method := range []string{"tasks/get", "tasks/cancel"} {
		other.send(`{"jsonrpc":"2.0","id":2,"method":"` + method + `","params":{"taskId":"` + tk.TaskID + `",` + tasksMeta + `}}`)
		if r := other.next(); r.Error == nil || r.Error.Code != mcpbridge.CodeInvalidParams || !strings.Contains(r.Error.Message, "not found") {
			t.Fatalf("%s by another principal = %+v", method, r)
		}
	}
	get := func() response {
		owner.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"` + tk.TaskID + `",` + tasksMeta + `}}`)
		return owner.next()
	}
	if got := decodeTask(t, get()); got.Status != "working" {
		t.Fatalf("owner's tasks/get = %+v", got)
	}
	owner.send(`{"jsonrpc":"2.0","id":4,"method":"tasks/cancel","params":{"taskId":"` + tk.TaskID + `",` + tasksMeta + `}}`)
	if r := owner.next(); r.Error != nil || string(r.ID) != "4" {
		t.Fatalf("tasks/cancel = %+v", r)
	}
	waitFor(t, gate.cancelled, "cancellation of the tool's context")
	if got := pollTask(t, get); got.Status != "cancelled" {
		t.Fatalf("after cancel: %+v", got)
	}

	// 2025 era: the extension does not exist there; the call is plain.
	owner.send(`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`)
	owner.next()
	go func() { gate.release <- struct{}{} }()
	owner.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"sync-knowledge","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`)
	r := owner.next()
	var plain toolResult
	if r.Error != nil || json.Unmarshal(r.Result, &plain) != nil || plain.IsError || plain.StructuredContent == nil {
		t.Fatalf("2025 call = %+v %s", r.Error, r.Result)
	}
	owner.send(`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"` + tk.TaskID + `"}}`)
	if r := owner.next(); r.Error == nil || r.Error.Code != mcpbridge.CodeMethodNotFound {
		t.Fatalf("2025 tasks/get = %+v", r)
	}
}
