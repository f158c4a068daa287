package store

import (
	"context"
	"time"
)

// Source types of a memory: where its content came from.
const (
	SourceConversation  = "conversation"
	SourceToolResult    = "tool_result"
	SourceKnowledgeSync = "knowledge_sync"
	SourceManual        = "manual"
	SourceImport        = "import"
)

// SourceTypes lists every accepted Memory.SourceType.
var SourceTypes = []string{SourceConversation, SourceToolResult, SourceKnowledgeSync, SourceManual, SourceImport}

// Memory is one remembered statement owned by a layer of a tenant.
type Memory struct {
	// ID is "mem_" followed by 32 lowercase hex digits (a UUIDv7 without
	// dashes). AddMemory assigns it when empty.
	ID string
	// Tenant owns the memory; every lookup is scoped by it.
	Tenant string
	// Layer is the memory's layer.
	Layer Layer
	// ScopeID identifies the owner within the layer: the user id for
	// LayerUser, the session id for LayerSession, the agent, project, team
	// or org id, and the tenant itself for LayerCompany.
	ScopeID string
	// Content is the remembered text; it is what full-text search matches.
	Content string
	// Tags label the memory; the store keeps them de-duplicated, in order.
	Tags []string
	// Metadata is an arbitrary JSON object. Numbers come back as float64.
	Metadata map[string]any
	// SourceType is one of SourceTypes; empty means SourceManual (or
	// SourceKnowledgeSync for UpsertPointer).
	SourceType string
	// KnowledgeItemID is set on pointer memories written by knowledge sync
	// and empty otherwise.
	KnowledgeItemID string
	// ContentHash is, for pointers, the hash of the knowledge item.
	ContentHash string
	// Orphaned marks a pointer whose knowledge item was removed.
	Orphaned bool
	// CreatedAt and UpdatedAt are set by the store, in UTC.
	CreatedAt, UpdatedAt time.Time
}

// Scope selects the memories of one owner within one layer.
type Scope struct {
	Layer   Layer
	ScopeID string
}

// Defaults and bounds of SearchQuery.
const (
	// DefaultCandidateLimit applies when SearchQuery.CandidateLimit <= 0.
	DefaultCandidateLimit = 200
	// MaxCandidateLimit bounds SearchQuery.CandidateLimit.
	MaxCandidateLimit = 1000
	// MatchedCap bounds the work of a search. A text search ranks only
	// the newest MatchedCap matches in scope (by insertion) and counts
	// them; a listing without terms counts up to MatchedCap. Either way
	// the cost of a search does not grow with the store.
	MatchedCap = 1000
)

// SearchQuery selects candidate memories for ranking.
type SearchQuery struct {
	// Tenant is required.
	Tenant string
	// Terms are lower-cased words, OR-ed (see MinMatch). They are plain text: the store
	// splits them into letter and digit runs and quotes each run itself, so
	// no full-text or SQL syntax ever reaches the engine; common English
	// stop words and runs over 128 bytes are dropped. Empty Terms means no
	// text filter: newest first, Relevance 0. Terms that all drop out match
	// nothing.
	Terms []string
	// Scopes restricts the search to these layer+scope pairs; empty matches
	// nothing.
	Scopes []Scope
	// Tags, when set, keeps only memories carrying all of them.
	Tags []string
	// CandidateLimit bounds the rows returned: <= 0 means
	// DefaultCandidateLimit, larger than MaxCandidateLimit is clamped.
	CandidateLimit int
	// IncludeOrphaned also returns orphaned pointer memories.
	IncludeOrphaned bool
	// MinMatch, when above 1, lets the store skip memories that contain
	// fewer than MinMatch of the distinct Terms (each term one word; terms
	// the engine does not index, such as stop words, count as present;
	// all of them when MinMatch exceeds their number), so a caller that
	// cannot use weaker matches does not pay for them. It never drops a
	// memory with MinMatch terms or more. Small cases are exact (at most
	// 8 term occurrences in the expansion, such as 2 of 2 or 2 of 3
	// words); larger ones use a cheaper necessary condition and may keep
	// some weaker matches.
	MinMatch int
	// Light, with Terms, lets the store leave out of each candidate what
	// ranking does not read: only Tenant, ID, Layer, ScopeID, Content and
	// CreatedAt are then sure to be set (SearchResult.Light says whether
	// the store did). A caller ranking many candidates to show a few
	// reads the rows it shows in full afterwards (VectorStore.GetMemories),
	// from a later snapshot, and checks them again.
	Light bool
}

// Candidate is one search hit.
type Candidate struct {
	Memory Memory
	// Relevance is the backend's full-text relevance, Okapi BM25 over the
	// ranked window's own statistics on both backends, >= 0, higher is
	// better. The backends count words their own way (SQLite: the words
	// of package words; PostgreSQL: the lexemes of its english
	// configuration), so their scores of one memory are close, not equal.
	Relevance float64
}

// SearchResult is the answer to SearchMemories.
type SearchResult struct {
	// Candidates are best first: by relevance, then newest.
	Candidates []Candidate
	// Matched counts the matching rows in scope, up to MatchedCap.
	Matched int
	// Capped reports that more than MatchedCap rows matched: a text
	// search then ranked only the newest MatchedCap of them.
	Capped bool
	// Light reports candidates with only the fields SearchQuery.Light
	// names set.
	Light bool
}

// MemoryStore stores memories and knowledge pointers.
type MemoryStore interface {
	// AddMemory inserts m, filling ID (when empty), CreatedAt and UpdatedAt.
	// An ID that already exists in the tenant is ErrConflict.
	AddMemory(ctx context.Context, m *Memory) error
	// GetMemory returns the memory, or ErrNotFound (also when id exists in
	// another tenant).
	GetMemory(ctx context.Context, tenant, id string) (Memory, error)
	// DeleteMemory removes the memory, or returns ErrNotFound as GetMemory.
	DeleteMemory(ctx context.Context, tenant, id string) error
	// SearchMemories returns the best candidates of q.
	SearchMemories(ctx context.Context, q SearchQuery) (SearchResult, error)
	// CountMemories counts the tenant's memories, pointers included.
	CountMemories(ctx context.Context, tenant string) (int, error)
	// UpsertPointer inserts or updates the pointer memory keyed by
	// (Tenant, KnowledgeItemID). An update keeps the ID and CreatedAt,
	// clears Orphaned and refreshes everything else; m is filled with the
	// stored ID and timestamps.
	UpsertPointer(ctx context.Context, m *Memory) (created bool, err error)
	// ListPointers returns the tenant's pointer memories, orphaned ones
	// included, ordered by KnowledgeItemID.
	ListPointers(ctx context.Context, tenant string) ([]Memory, error)
	// MarkOrphaned flags the pointers of the given knowledge items and
	// returns how many were newly flagged.
	MarkOrphaned(ctx context.Context, tenant string, knowledgeItemIDs []string) (int, error)
}
