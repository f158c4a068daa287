package store

import (
	"context"
	"time"
)

// KnowledgeVersion is the knowledge set a deployment's replicas serve:
// every replica that sees a newer Version than the one it loaded reloads
// its knowledge directory (docs/ARCHITECTURE.md, "Knowledge on every
// replica").
type KnowledgeVersion struct {
	// Version counts the knowledge sets published; 0 before the first.
	Version int64
	// Digest identifies the content of the set published
	// (kb.Library.Digest).
	Digest string
	// At is when it was published; zero before the first.
	At time.Time
}

// KnowledgeVersionStore shares the knowledge set version between the
// replicas of one database. Both backends implement it.
type KnowledgeVersionStore interface {
	// KnowledgeVersion returns the version last published; the zero
	// KnowledgeVersion before the first.
	KnowledgeVersion(ctx context.Context) (KnowledgeVersion, error)
	// PublishKnowledge records a set with digest: when it differs from the
	// current one, the version moves to the next number (atomically, so
	// two replicas publishing at once get distinct numbers); when it is the
	// same, nothing changes. It returns the version now current.
	PublishKnowledge(ctx context.Context, digest string) (KnowledgeVersion, error)
}
