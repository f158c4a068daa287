package store

import "github.com/toolsvc/toolsvc/internal/lib/taskrec"

// TaskRecord is one MCP task (see taskrec.Record).
type TaskRecord = taskrec.Record

// TaskWorking is the status of a task still running.
const TaskWorking = taskrec.Working

// TaskStore keeps MCP tasks (see taskrec.Store). Both backends implement
// it.
type TaskStore = taskrec.Store
