package store

import (
	"context"
	"time"
)

// ToolDefinition is the approved definition of one tool of an upstream MCP
// server (docs/MCP.md, "Pinned definitions"): what agents see of the tool
// until an operator approves another, shared by every replica.
type ToolDefinition struct {
	// Upstream is the upstream's name; Tool the name the server lists.
	Upstream, Tool string
	// Fingerprint is sha256: and the hex digest of the canonical JSON of
	// the definition (name, title, description, schemas, annotations,
	// _meta).
	Fingerprint string
	// Definition is that JSON.
	Definition []byte
	// ApprovedBy is "first seen" for a definition recorded when the tool
	// first passed the checklist, or the operator who approved it.
	ApprovedBy string
	// At is when it was recorded; defaults to now.
	At time.Time
}

// DefinitionStore keeps approved upstream tool definitions. Both backends
// implement it.
type DefinitionStore interface {
	// PinDefinition records d unless a definition of its tool is already
	// recorded (the first replica to see a tool wins), and returns the
	// recorded one.
	PinDefinition(ctx context.Context, d *ToolDefinition) (*ToolDefinition, error)
	// ApproveDefinition records d, replacing the tool's definition.
	ApproveDefinition(ctx context.Context, d *ToolDefinition) error
	// ApprovedDefinitions returns the recorded definitions of an
	// upstream's tools, by tool.
	ApprovedDefinitions(ctx context.Context, upstream string) (map[string]*ToolDefinition, error)
}
