package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// MemoryVector is the embedding of one memory's content, made by Model. A
// memory has at most one stored vector; one made by another model counts
// as missing (see VectorStore.PendingVectors), so vectors of two models are
// never compared.
type MemoryVector struct {
	Tenant, ID string
	// Layer and ScopeID are the memory's, returned by ScanVectors so that
	// an index can filter by them exactly; SetVectors ignores them.
	Layer   Layer
	ScopeID string
	// Model names what made Vec.
	Model string
	// Content is the text that was embedded. SetVectors stores the vector
	// only while the memory still has this content, so a vector computed
	// before a pointer's content changed is never kept for the new text.
	Content string
	Vec     []float32
}

// VectorCursor pages PendingVectors: memories after (Tenant, ID).
type VectorCursor struct {
	Tenant, ID string
}

// VectorStore keeps memory embeddings. Both backends implement it; it is
// separate from MemoryStore so that tools that need no vectors (and test
// fakes) need not.
type VectorStore interface {
	// SetVectors stores each vector for its memory, replacing the one it
	// had. A vector whose memory is gone or whose Content no longer is
	// the memory's content is skipped; stored reports which were kept.
	SetVectors(ctx context.Context, vs []MemoryVector) (stored []bool, err error)
	// PendingVectors returns up to limit memories of every tenant that
	// have no vector made by model, ordered by (Tenant, ID), after the
	// cursor.
	PendingVectors(ctx context.Context, model string, after VectorCursor, limit int) ([]Memory, error)
	// ScanVectors calls fn with every stored vector made by model (Content
	// not filled); an error from fn stops the scan and is returned.
	ScanVectors(ctx context.Context, model string, fn func(MemoryVector) error) error
	// VectorProgress counts the memories that have a vector made by model
	// and all memories, over every tenant.
	VectorProgress(ctx context.Context, model string) (done, total int, err error)
	// GetMemories returns the tenant's memories among ids, in no
	// particular order; ids that do not exist are left out.
	GetMemories(ctx context.Context, tenant string, ids []string) ([]Memory, error)
}

// VectorFeedCursor is a position in a VectorFeed. Every change of a
// transaction before XID, and those of XID up to Seq, are behind it.
type VectorFeedCursor struct {
	XID uint64
	Seq int64
}

// VectorFeed is implemented by the store that several processes can share
// (PostgreSQL). It reports the memories whose vector any of them changed,
// so that each process keeps its in-process index in step with the others'
// writes, not only its own.
type VectorFeed interface {
	// VectorFeedStart returns the cursor from which VectorChanges reports
	// every change not committed before the call; take it before
	// ScanVectors, and no change falls between the two.
	VectorFeedStart(ctx context.Context) (VectorFeedCursor, error)
	// VectorChanges returns up to limit memories changed after the
	// cursor, each with its current layer, scope and vector of model, Vec
	// nil when it has none now (deleted, re-worded, or made by another
	// model), and the cursor to ask from next. A change still being
	// committed is reported once it is; one may be reported twice, so
	// applying one must be idempotent.
	VectorChanges(ctx context.Context, model string, after VectorFeedCursor, limit int) ([]MemoryVector, VectorFeedCursor, error)
	// PruneVectorFeed drops changes older than age.
	PruneVectorFeed(ctx context.Context, age time.Duration) error
}

// MaxVectorDim bounds the length of a stored vector.
const MaxVectorDim = 8192

// EncodeVector packs v as little-endian float32s, the stored form.
func EncodeVector(v []float32) ([]byte, error) {
	if len(v) == 0 || len(v) > MaxVectorDim {
		return nil, fmt.Errorf("store: a vector has 1..%d values, got %d", MaxVectorDim, len(v))
	}
	out := make([]byte, 0, 4*len(v))
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, errors.New("store: a vector value is not finite")
		}
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
	}
	return out, nil
}

// DecodeVector unpacks EncodeVector's form.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b) == 0 || len(b)%4 != 0 || len(b) > 4*MaxVectorDim {
		return nil, fmt.Errorf("store: stored vector of %d bytes", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
