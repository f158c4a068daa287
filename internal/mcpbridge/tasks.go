package mcpbridge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// The Tasks extension (io.modelcontextprotocol/tasks, SEP-2663) lets a
// server answer a tools/call with a task handle instead of its result;
// the client polls tasks/get for status, progress (statusMessage) and, at
// the end, the CallToolResult, and may cancel with tasks/cancel. The
// server decides per request: the client only declares the extension in
// the request's _meta clientCapabilities, and a client that did not gets
// the plain result as always. The revision defines the extension for
// 2026-07-28 only (a 2025 client's capability enables nothing), so 2025
// clients are answered synchronously.
//
// toolsvc runs the tools whose contract is slow as tasks. The task's work
// is the same tools/call through the chain, with the starting request's
// credentials and metadata: authenticated, authorized, rate limited,
// validated and audited like any call, and tasks/cancel cancels the tool's
// context. A task belongs to the principal that started it: for anyone
// else (even of the same tenant) its id is unknown, with the very error of
// an id that never existed. With a mcptask.Store (the server's store, SQLite or
// PostgreSQL) tasks are rows every replica reads, so tasks/get and
// tasks/cancel work on any replica and after a restart (taskstore.go);
// without one they live in the bridge's memory (docs/MCP.md).

const (
	extTasks          = "io.modelcontextprotocol/tasks"
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
	// taskPollInterval is the pollIntervalMs tasks suggest.
	taskPollInterval = 1000
)

// Task statuses.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// runsAsTask reports whether t runs as a task for a client that declared
// the extension: its contract says so by its response-time class, slow
// (over a second, the class whose work outlasts a request), so whether a
// tool is a task is decided where the tool is written and a new slow tool
// needs nothing of the bridge (docs/MCP.md, "The transport knows no
// tool").
func runsAsTask(t *registry.Tool) bool {
	return t != nil && t.Spec.GetResponseTime() == responseTimeSlow
}

// responseTimeSlow is the response-time class of tools run as tasks
// (toolsvc.v1.Tool.response_time).
const responseTimeSlow = "slow"

// declaresTasks reports whether a request's _meta client capabilities
// declare the Tasks extension.
func declaresTasks(params json.RawMessage) bool {
	if !bytes.Contains(params, []byte(extTasks)) {
		return false
	}
	var p struct {
		Meta struct {
			Capabilities struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	ext := bytes.TrimSpace(p.Meta.Capabilities.Extensions[extTasks])
	return len(ext) > 0 && ext[0] == '{'
}

// task is one task: its identity and owner, then its state under mu.
type task struct {
	id, owner string
	created   time.Time
	cancel    context.CancelFunc
	// userCancel is set when the owner cancelled the task (tasks/cancel,
	// here or on another replica), not the replica's shutdown.
	userCancel atomic.Bool

	mu      sync.Mutex
	status  string
	message string
	updated time.Time
	// result is the CallToolResult of a completed task; err the JSON-RPC
	// error of a failed one.
	result []byte
	err    *framing.Error
	// dirty: message changed since it was last written to the mcptask.Store.
	dirty bool
}

func (t *task) terminal() bool { return t.status != taskWorking }

// taskView is a task as tasks/get, and the creation result, render it.
type taskView struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage,omitempty"`
	CreatedAt      string                     `json:"createdAt"`
	LastUpdatedAt  string                     `json:"lastUpdatedAt"`
	TTLMs          int64                      `json:"ttlMs"`
	PollIntervalMs int                        `json:"pollIntervalMs"`
	Result         json.RawMessage            `json:"result,omitempty"`
	Error          *framing.Error             `json:"error,omitempty"`
	Meta           map[string]json.RawMessage `json:"_meta"`
}

// render is the task as a result of type resultType ("task" when created,
// "complete" for tasks/get, which alone carries the result or error).
func (b *Bridge) renderTask(t *task, resultType string) ([]byte, error) {
	t.mu.Lock()
	v := taskView{
		ResultType: resultType, TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: t.created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.updated.UTC().Format(time.RFC3339Nano),
		TTLMs: b.cfg.TaskTTL.Milliseconds(), PollIntervalMs: taskPollInterval,
		Meta: map[string]json.RawMessage{metaServerInfo: b.serverInfoJSON()},
	}
	if resultType == resultComplete {
		v.Result, v.Error = t.result, t.err
	}
	t.mu.Unlock()
	return json.Marshal(v)
}

// taskStore holds the tasks, at most perOwner per principal, each for ttl
// from its creation once finished.
type taskStore struct {
	perOwner int
	ttl      time.Duration
	wg       sync.WaitGroup
	mu       sync.Mutex
	byID     map[string]*task
	byOwner  map[string][]*task // oldest first
	closed   bool
}

func newTaskStore(perOwner int, ttl time.Duration) *taskStore {
	return &taskStore{perOwner: perOwner, ttl: ttl, byID: map[string]*task{}, byOwner: map[string][]*task{}}
}

// create registers a working task of owner, with an unguessable id. At
// the bound it drops owner's oldest finished task; ok is false when all of
// owner's tasks are still running (or the store is closed), and the call
// is then answered without a task. The caller runs the task and calls
// s.wg.Done when it ends.
func (s *taskStore) create(owner string, cancel context.CancelFunc, now time.Time) (t *task, ok bool) {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	t = &task{id: hex.EncodeToString(raw[:]), owner: owner, created: now, cancel: cancel, status: taskWorking, updated: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	own := s.byOwner[owner]
	if len(own) >= s.perOwner {
		i := 0
		for i < len(own) && !own[i].isTerminal() {
			i++
		}
		if i == len(own) {
			return nil, false
		}
		delete(s.byID, own[i].id)
		own = append(own[:i:i], own[i+1:]...)
	}
	s.byOwner[owner] = append(own, t)
	s.byID[t.id] = t
	s.wg.Add(1)
	return t, true
}

func (t *task) isTerminal() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.terminal()
}

// get returns task id if owner holds it and it has not expired; anything
// else is (nil, false) alike, so that ids cannot be probed.
func (s *taskStore) get(id, owner string, now time.Time) (*task, bool) {
	s.mu.Lock()
	t, ok := s.byID[id]
	s.mu.Unlock()
	if !ok || t.owner != owner || (t.isTerminal() && now.After(t.created.Add(s.ttl))) {
		return nil, false
	}
	return t, true
}

// expire forgets the finished tasks older than the TTL.
func (s *taskStore) expire(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for owner, own := range s.byOwner {
		kept := own[:0:0]
		for _, t := range own {
			if t.isTerminal() && now.After(t.created.Add(s.ttl)) {
				delete(s.byID, t.id)
				continue
			}
			kept = append(kept, t)
		}
		if len(kept) == 0 {
			delete(s.byOwner, owner)
		} else {
			s.byOwner[owner] = kept
		}
	}
}

// close cancels the running tasks and waits for them to end.
func (s *taskStore) close() {
	s.mu.Lock()
	s.closed = true
	for _, t := range s.byID {
		t.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// len is the number of tasks held (running or finished).
func (s *taskStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// startTask runs tools/call of tool t (name, at version: "" for the
// highest) with args as a task of x's principal, with the call's metadata
// md; ok is false when the principal
// holds its bound of running tasks (the caller then calls synchronously).
func (b *Bridge) startTask(x *exchange, t *registry.Tool, name, version string, args []byte, md metadata.MD) (created []byte, ok bool, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	var tk *task
	if b.cfg.Tasks != nil {
		tk, ok, err = b.createStoredTask(principalKey(x.principal), cancel, time.Now())
	} else {
		tk, ok = b.tasks.create(principalKey(x.principal), cancel, time.Now())
	}
	if !ok || err != nil {
		cancel()
		return nil, false, err
	}
	ctx = x.toChain(ctx, md)
	ctx = callctx.WithProgress(ctx, tk.progress)
	// A task has nothing outstanding for its client to answer: its
	// tool's questions are refused, naming why (ask.go).
	ctx = callctx.WithAsker(ctx, taskAsker{})
	// The task's own exchange: no peer, no stream, no log messages (the
	// extension sends none for tasks).
	tx := &exchange{md: md, principal: x.principal, rev: modernRevision(-1)}
	go b.runTask(ctx, tk, tx, t, name, version, bytes.Clone(args))
	created, err = b.renderTask(tk, "task")
	return created, true, err
}

// runTask runs the task's call through the chain and records its outcome.
func (b *Bridge) runTask(ctx context.Context, tk *task, x *exchange, t *registry.Tool, name, version string, args []byte) {
	defer b.tasks.wg.Done()
	defer tk.cancel()
	start := time.Now()
	sc, buf, callErr := b.invoke(ctx, t, name, version, args)
	result, err := b.outcome(x, name, start, sc, callErr)
	if buf != nil {
		scratch.Put(buf)
	}
	tk.mu.Lock()
	defer func() {
		tk.mu.Unlock()
		if b.cfg.Tasks != nil {
			b.finishStoredTask(tk)
		}
	}()
	tk.updated = time.Now()
	switch {
	case callErr != nil && ctx.Err() != nil && b.cfg.Tasks != nil && !tk.userCancel.Load():
		// The replica is shutting down: the task did not finish, and the
		// client may start it again on another replica.
		tk.status, tk.err = taskFailed, taskLost("the replica running it shut down")
		tk.message = tk.err.Message
	case callErr != nil && ctx.Err() != nil:
		tk.status, tk.message = taskCancelled, "cancelled"
	case err != nil:
		var re *framing.Error
		if !errors.As(err, &re) {
			re = &framing.Error{Code: CodeInternalError, Message: "internal error"}
		}
		tk.status, tk.message, tk.err = taskFailed, re.Message, re
	default:
		tk.status, tk.message = taskCompleted, ""
		// What the request would have returned: a complete CallToolResult.
		full := make([]byte, 0, len(result)+24)
		full = append(full, result[:len(result)-1]...)
		full = append(full, `,"resultType":"complete"}`...)
		tk.result = full
	}
}

// progress records the tool's progress as the task's status message.
func (tk *task) progress(done, total float64, message string) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if tk.terminal() {
		return
	}
	msg := fmt.Sprintf("%g", done)
	if total > 0 {
		msg += fmt.Sprintf(" of %g", total)
	}
	if message != "" {
		msg += ": " + message
	}
	tk.message, tk.updated, tk.dirty = msg, time.Now(), true
}

// taskRequest answers tasks/get, tasks/update and tasks/cancel of a
// modern request.
func (b *Bridge) taskRequest(x *exchange, m *framing.Message) ([]byte, error) {
	if !declaresTasks(m.Params) {
		return nil, missingTasksCapability()
	}
	if x.principal == nil {
		return nil, errUnauthorized
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	if err := params(m.Params, &p); err != nil {
		return nil, err
	}
	if p.TaskID == "" {
		return nil, framing.InvalidParams(`invalid params: "taskId" is required`)
	}
	if b.cfg.Tasks != nil {
		return b.storedTaskRequest(x, m, p.TaskID)
	}
	tk, ok := b.tasks.get(p.TaskID, principalKey(x.principal), time.Now())
	if !ok {
		return nil, errTaskNotFound
	}
	switch m.Method {
	case methodTasksGet:
		return b.renderTask(tk, resultComplete)
	case methodTasksCancel:
		// Cooperative: the tool's context is cancelled; the task ends
		// cancelled unless it finished first.
		tk.userCancel.Store(true)
		tk.cancel()
	}
	// tasks/update: toolsvc never asks a task for input, so there is
	// nothing outstanding and every inputResponse is ignored.
	return []byte("{}"), nil
}

// errTaskNotFound answers an id that is not one of the caller's live tasks.
var errTaskNotFound = framing.InvalidParams("Failed to retrieve task: Task not found")

// Tasks is the number of tasks held in memory, running or finished (the
// tests' leak check); with a mcptask.Store, the tasks running here.
func (b *Bridge) Tasks() int { return b.tasks.len() }
