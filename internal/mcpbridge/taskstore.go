package mcpbridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/mcptask"
	"github.com/toolsvc/toolsvc/internal/base/periodic"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// taskLost is the error of a task whose replica stopped before it ended:
// retryable, the call may simply be made again.
func taskLost(why string) *framing.Error {
	return &framing.Error{Code: CodeInternalError, Message: "task lost: " + why + " before it finished; call the tool again",
		Data: map[string]any{"retryable": true, "reason": "TASK_LOST"}}
}

// storedOwner is how a task's owner (a principalKey) is stored: a hash,
// since the key holds NUL separators that PostgreSQL text cannot.
func storedOwner(owner string) string {
	h := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(h[:])
}

// storeTimeout bounds the task store calls the bridge makes on its own.
const storeTimeout = 5 * time.Second

// createStoredTask inserts a working task of owner in the mcptask.Store and
// registers it as running here.
func (b *Bridge) createStoredTask(owner string, cancel context.CancelFunc, now time.Time) (*task, bool, error) {
	tk := &task{id: newSessionID(), owner: owner, created: now, cancel: cancel, status: taskWorking, updated: now}
	s := b.tasks
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, false, nil
	}
	s.wg.Add(1)
	s.byID[tk.id] = tk
	s.mu.Unlock()
	ctx, cancelCtx := context.WithTimeout(context.Background(), storeTimeout)
	defer cancelCtx()
	ok, err := b.cfg.Tasks.CreateTask(ctx, &mcptask.Record{ID: tk.id, Owner: storedOwner(owner), Replica: b.replica, Status: taskWorking,
		CreatedAt: now, UpdatedAt: now, LeaseUntil: now.Add(b.cfg.TaskLease)}, b.cfg.TasksPerPrincipal, now.Add(-b.cfg.TaskTTL))
	if err != nil {
		// The call is then answered synchronously, as at the bound.
		b.log.Error("mcp task: cannot record it", slog.String("error", err.Error()))
	}
	if !ok || err != nil {
		s.mu.Lock()
		delete(s.byID, tk.id)
		s.mu.Unlock()
		s.wg.Done()
		return nil, false, nil
	}
	return tk, true, nil
}

// finishStoredTask writes a finished task's outcome to the mcptask.Store and
// forgets it here.
func (b *Bridge) finishStoredTask(tk *task) {
	tk.mu.Lock()
	r := &mcptask.Record{ID: tk.id, Owner: storedOwner(tk.owner), Replica: b.replica, Status: tk.status, Message: tk.message,
		Result: tk.result, UpdatedAt: tk.updated}
	if tk.err != nil {
		r.Error, _ = json.Marshal(tk.err)
	}
	tk.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := b.cfg.Tasks.FinishTask(ctx, r); err != nil {
		// The lease then runs out and another replica fails the task.
		b.log.Error("mcp task: cannot record its outcome", slog.String("task", tk.id), slog.String("error", err.Error()))
	}
	b.tasks.mu.Lock()
	delete(b.tasks.byID, tk.id)
	b.tasks.mu.Unlock()
}

// storedTaskRequest answers tasks/get, tasks/update and tasks/cancel from
// the mcptask.Store: the task may run on any replica, or none any more.
func (b *Bridge) storedTaskRequest(x *exchange, m *framing.Message, id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	r, err := b.cfg.Tasks.GetTask(ctx, id)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if r == nil || r.Owner != storedOwner(principalKey(x.principal)) || (r.Status != taskWorking && now.After(r.CreatedAt.Add(b.cfg.TaskTTL))) {
		return nil, errTaskNotFound
	}
	b.tasks.mu.Lock()
	local := b.tasks.byID[id]
	b.tasks.mu.Unlock()
	switch m.Method {
	case methodTasksGet:
		tk := &task{id: r.ID, owner: r.Owner, created: r.CreatedAt, status: r.Status, message: r.Message, updated: r.UpdatedAt, result: r.Result}
		if len(r.Error) > 0 {
			tk.err = &framing.Error{}
			if json.Unmarshal(r.Error, tk.err) != nil {
				tk.err = &framing.Error{Code: CodeInternalError, Message: "internal error"}
			}
		}
		if local != nil && r.Status == taskWorking {
			// Running here: its progress is fresher than the store's.
			local.mu.Lock()
			tk.message, tk.updated = local.message, local.updated
			local.mu.Unlock()
		}
		return b.renderTask(tk, resultComplete)
	case methodTasksCancel:
		if local != nil {
			local.userCancel.Store(true)
			local.cancel()
		} else if r.Status == taskWorking {
			// The replica running it sees the request at its next renewal.
			if err := b.cfg.Tasks.CancelTask(ctx, id); err != nil {
				return nil, err
			}
		}
	}
	return []byte("{}"), nil
}

// leaseTasks keeps this replica's tasks alive in the store (renewing
// their leases, writing their progress, cancelling those cancelled
// elsewhere) and fails the tasks of replicas that died, until ctx ends.
func (b *Bridge) leaseTasks(ctx context.Context) {
	lost, _ := json.Marshal(taskLost("the replica running it stopped"))
	lostMsg := taskLost("the replica running it stopped").Message
	periodic.Run(ctx, max(b.cfg.TaskLease/5, 10*time.Millisecond), func(context.Context) { b.renewTasks(lost, lostMsg) }, periodic.Now())
}

func (b *Bridge) renewTasks(lost []byte, lostMsg string) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	now := time.Now()
	b.tasks.mu.Lock()
	running := make([]*task, 0, len(b.tasks.byID))
	for _, tk := range b.tasks.byID {
		running = append(running, tk)
	}
	b.tasks.mu.Unlock()
	if len(running) > 0 {
		for _, tk := range running {
			tk.mu.Lock()
			msg, at, dirty := tk.message, tk.updated, tk.dirty && !tk.terminal()
			tk.dirty = false
			tk.mu.Unlock()
			if dirty {
				if err := b.cfg.Tasks.ProgressTask(ctx, tk.id, msg, at); err != nil {
					b.log.Warn("mcp task progress", slog.String("error", err.Error()))
				}
			}
		}
		cancels, err := b.cfg.Tasks.RenewTasks(ctx, b.replica, now.Add(b.cfg.TaskLease))
		if err != nil {
			b.log.Warn("mcp task leases", slog.String("error", err.Error()))
		}
		for _, id := range cancels {
			b.tasks.mu.Lock()
			tk := b.tasks.byID[id]
			b.tasks.mu.Unlock()
			if tk != nil {
				tk.userCancel.Store(true)
				tk.cancel()
			}
		}
	}
	if n, err := b.cfg.Tasks.FailLostTasks(ctx, now, lostMsg, lost); err != nil {
		b.log.Warn("mcp lost tasks", slog.String("error", err.Error()))
	} else if n > 0 {
		b.log.Warn("mcp tasks lost with their replica marked failed", slog.Int64("tasks", n))
	}
}
