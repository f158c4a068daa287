package store

import (
	"context"
	"encoding/hex"

	"github.com/google/uuid"
)

// Store is a complete storage backend. Implementations are safe for
// concurrent use.
type Store interface {
	MemoryStore
	SyncStore
	AuditStore
	// Ping checks that the backend answers.
	Ping(ctx context.Context) error
	// Backend names the implementation: "sqlite" or "postgres".
	Backend() string
	// Close releases the backend's connections.
	Close() error
}

// MemoryIDPrefix starts every memory ID.
const MemoryIDPrefix = "mem_"

// NewMemoryID returns a fresh memory ID: "mem_" and a UUIDv7 as 32 lowercase
// hex digits, so IDs sort roughly by creation time.
func NewMemoryID() string {
	// NewV7 fails only when crypto/rand does, which since Go 1.24 crashes
	// the program instead of returning an error.
	u := uuid.Must(uuid.NewV7())
	return MemoryIDPrefix + hex.EncodeToString(u[:])
}

// MemoryBulkAdder is implemented by backends that can insert many memories
// in one transaction (both do). It is optional, for imports and
// benchmarks, and behaves as AddMemory on each element, all or nothing.
type MemoryBulkAdder interface {
	AddMemories(ctx context.Context, ms []*Memory) error
}
