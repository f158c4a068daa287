package store

import (
	"context"
	"time"
)

// Decisions recorded in an AuditEvent.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
	DecisionError = "error"
)

// AuditEvent is one tool invocation as seen by the policy layer.
type AuditEvent struct {
	// ID is assigned by AppendAudit.
	ID int64
	// At defaults to now when zero; stored in UTC.
	At                             time.Time
	Tool, ToolVersion, Subject     string
	Tenant, TraceID, CorrelationID string
	Transport                      string
	Decision, Reason, Code         string
	LatencyMs                      float64
}

// Bounds of AuditFilter.Limit.
const (
	DefaultAuditLimit = 50
	MaxAuditLimit     = 500
)

// AuditFilter selects audit events. Empty fields do not filter.
type AuditFilter struct {
	// Tenant is required.
	Tenant string
	// Tool, Subject and Decision match exactly when set.
	Tool, Subject, Decision string
	// Since is inclusive, Until exclusive; zero values do not bound.
	Since, Until time.Time
	// Limit is the page size: <= 0 means DefaultAuditLimit, larger than
	// MaxAuditLimit is clamped.
	Limit int
	// Cursor continues a previous page; it is only valid with the same
	// filter fields (Limit aside).
	Cursor string
}

// AuditStore is the append-only audit log: it has no update or delete, and
// both backends also refuse them at the database level.
type AuditStore interface {
	// AppendAudit stores e and fills its ID (and At when zero).
	AppendAudit(ctx context.Context, e *AuditEvent) error
	// ListAudit returns one page, newest first, and the cursor of the next
	// page ("" on the last one). A bad cursor is ErrInvalidCursor.
	ListAudit(ctx context.Context, f AuditFilter) (events []AuditEvent, nextCursor string, err error)
}

// AuditBatcher is implemented by stores that can append several audit
// events in one transaction (both backends do). The audit writer
// (internal/store/auditlog) uses it to write what queued up while the
// last write ran.
type AuditBatcher interface {
	AppendAudits(ctx context.Context, events []*AuditEvent) error
}

// AuditPruner is implemented by stores that can prune old audit events
// (both backends do), for --audit-retention. The database refuses to
// delete an event newer than the cutoff PruneAudit sets, which only moves
// forward: the log stays append-only for everything retention keeps.
type AuditPruner interface {
	// PruneAudit deletes at most limit events older than before, oldest
	// first, in one transaction, and returns how many it deleted.
	PruneAudit(ctx context.Context, before time.Time, limit int) (int, error)
}

// AuditIndexer is implemented by stores whose audit listing indexes are
// built behind the writer (both backends: docs/ARCHITECTURE.md, "Audit").
// An append pays only for the append; the store runs IndexAudit
// in the background, and ListAudit reads what it has not reached yet
// without an index, so a listing never misses an appended event.
type AuditIndexer interface {
	// IndexAudit indexes every event appended and not yet indexed, and
	// returns how many it indexed.
	IndexAudit(ctx context.Context) (int, error)
}
