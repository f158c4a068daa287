// Package mcptask holds the one record of an MCP task (the Tasks
// extension) and the interface of what keeps it: the MCP transport reads
// and writes tasks through Store, and both store backends implement it.
// It sits among the libraries because both sides import it and neither
// may import the other (a transport never reaches a store).
package mcptask

import (
	"context"
	"time"
)

// Record is one MCP task: who started it, which replica runs it and until
// when its lease holds, its status and outcome. Kept in the store so that
// every replica answers for it and a restart keeps it.
type Record struct {
	ID string
	// Owner identifies whoever started the task (a hash of its principal).
	Owner string
	// Replica is the replica running it; LeaseUntil is when the task counts
	// as lost unless that replica renews it.
	Replica string
	// Status is working, completed, failed or cancelled; Message its
	// status message.
	Status, Message string
	// Result is the CallToolResult of a completed task, Error the JSON-RPC
	// error of a failed one (both JSON, opaque to the store).
	Result, Error []byte
	// CancelRequested: tasks/cancel reached a replica that does not run
	// the task; the running one cancels it when it renews its lease.
	CancelRequested                  bool
	CreatedAt, UpdatedAt, LeaseUntil time.Time
}

// Working is the status of a task still running.
const Working = "working"

// Store keeps MCP tasks where every replica finds them. Both store
// backends implement it. Errors are the store's; a missing task is (nil,
// nil).
type Store interface {
	// CreateTask inserts r unless owner already holds perOwner tasks none
	// of which is finished: at the bound, the owner's oldest finished task
	// is deleted to make room. Finished tasks created before expiredBefore
	// no longer count (they are deleted first).
	CreateTask(ctx context.Context, r *Record, perOwner int, expiredBefore time.Time) (bool, error)
	// GetTask returns task id; nil, nil when there is none.
	GetTask(ctx context.Context, id string) (*Record, error)
	// ProgressTask sets a working task's status message.
	ProgressTask(ctx context.Context, id, message string, at time.Time) error
	// FinishTask records the outcome of a working task run by r.Replica
	// (Status, Message, Result, Error, UpdatedAt); a task already finished
	// (failed as lost meanwhile) is left as it is.
	FinishTask(ctx context.Context, r *Record) error
	// RenewTasks extends to leaseUntil the leases of replica's working
	// tasks and returns the ids of those whose cancellation was requested.
	RenewTasks(ctx context.Context, replica string, leaseUntil time.Time) (cancel []string, err error)
	// CancelTask requests the cancellation of a working task.
	CancelTask(ctx context.Context, id string) error
	// FailLostTasks marks failed, with message and errJSON, every working
	// task whose lease ended before now; it returns how many.
	FailLostTasks(ctx context.Context, now time.Time, message string, errJSON []byte) (int64, error)
	// PurgeTasks deletes the finished tasks created before before and
	// returns how many.
	PurgeTasks(ctx context.Context, before time.Time) (int64, error)
}
