package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/toolsvc/toolsvc/internal/base/periodic"
	"github.com/toolsvc/toolsvc/internal/base/spans"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/memory/vecindex"
)

// Stored vectors: with an embedder and a store that keeps vectors
// (store.VectorStore, both backends), add-memory embeds the content once
// and stores the vector with the model's name; search embeds only the
// query and asks the in-process index (package vecindex) for the nearest
// vectors in the caller's scopes. Memories without a vector of the current
// model (written while the provider was down, by knowledge sync, or before
// a model change) are embedded in the background by RunVectors, and by
// `toolsvc reembed` (Reembed).

const (
	// vectorCandidates is how many nearest vectors a search adds to the
	// full-text candidates.
	vectorCandidates = 50
	// fillBatch is how many pending memories one embeddings request
	// carries.
	fillBatch = 64
	// fillInterval is how often the background filler looks for memories
	// without a vector when nothing asks it sooner.
	fillInterval = time.Minute
	// fillRetry is the least wait after a failed fill.
	fillRetry = 5 * time.Second
	// writeEmbedTimeout bounds the embedding of add-memory when the call
	// has no deadline.
	writeEmbedTimeout = 5 * time.Second
	// feedBatch is how many changes one read of the vector feed applies.
	feedBatch = 1000
	// feedRetention is how long the vector feed keeps a change, pruned
	// every feedPruneEvery: a replica reads the feed every few seconds,
	// and one that restarts rebuilds its index from the store.
	feedRetention, feedPruneEvery = 24 * time.Hour, time.Hour
)

// Namer is implemented by embedders that know the name of their model;
// the name is recorded with every stored vector, so that vectors of two
// models are never compared. Embedders without it are named "default".
type Namer interface{ Name() string }

func modelName(e Embedder) string {
	if n, ok := e.(Namer); ok && n.Name() != "" {
		return n.Name()
	}
	return "default"
}

// vectors is the stored-vector state of a Service; nil without an
// embedder or a vector store.
type vectors struct {
	vs    store.VectorStore
	emb   Embedder
	model string
	index *vecindex.Index
	// kick asks the filler for a pass now.
	kick chan struct{}
	// ready is closed once the index is rebuilt from the store.
	ready     chan struct{}
	readyOnce sync.Once
}

func newVectors(st store.MemoryStore, emb Embedder) *vectors {
	vs, ok := st.(store.VectorStore)
	if !ok || emb == nil {
		return nil
	}
	return &vectors{vs: vs, emb: emb, model: modelName(emb), index: vecindex.New(),
		kick: make(chan struct{}, 1), ready: make(chan struct{})}
}

func (v *vectors) wake() {
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

// withHalfDeadline gives an embeddings call at most half of the time left,
// so a slow endpoint degrades the call instead of timing it out; without a
// deadline, fallback bounds it (0: none).
func withHalfDeadline(ctx context.Context, fallback time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithTimeout(ctx, time.Until(dl)/2)
	}
	if fallback > 0 {
		return context.WithTimeout(ctx, fallback)
	}
	return context.WithCancel(ctx)
}

// embedOne embeds one text and checks the answer's shape.
func embedOne(ctx context.Context, e Embedder, text string) ([]float32, error) {
	vecs, err := e.Embed(ctx, []string{text})
	if err == nil && len(vecs) != 1 {
		err = fmt.Errorf("embeddings: got %d vectors for 1 text", len(vecs))
	}
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}

func scopeOf(m store.Memory) vecindex.Scope {
	return vecindex.Scope{Tenant: m.Tenant, Layer: m.Layer, ScopeID: m.ScopeID}
}

// store saves the vectors of ms and indexes those the store kept.
func (v *vectors) store(ctx context.Context, ms []store.Memory, vecs [][]float32) (int, error) {
	rows := make([]store.MemoryVector, len(ms))
	for i, m := range ms {
		rows[i] = store.MemoryVector{Tenant: m.Tenant, ID: m.ID, Model: v.model, Content: m.Content, Vec: vecs[i]}
	}
	kept, err := v.vs.SetVectors(ctx, rows)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, ok := range kept {
		if !ok {
			continue
		}
		n++
		if err := v.index.Put(scopeOf(ms[i]), ms[i].ID, vecs[i]); err != nil {
			return n, err
		}
	}
	return n, nil
}

// onWrite embeds the content of memories just written and stores their
// vectors, fillBatch to a request, all within one deadline (half the
// call's time left, writeEmbedTimeout without one). On failure (returned)
// the memories stay stored; those not embedded yet are left to the
// filler, which is asked to try again.
func (v *vectors) onWrite(ctx context.Context, ms []store.Memory) error {
	ectx, cancel := withHalfDeadline(ctx, writeEmbedTimeout)
	defer cancel()
	for b := range slices.Chunk(ms, fillBatch) {
		texts := make([]string, len(b))
		for i, m := range b {
			texts[i] = m.Content
		}
		vecs, err := v.emb.Embed(ectx, texts)
		if err == nil && len(vecs) != len(b) {
			err = fmt.Errorf("embeddings: got %d vectors for %d texts", len(vecs), len(b))
		}
		if err == nil {
			_, err = v.store(ctx, b, vecs)
		}
		if err != nil {
			v.wake()
			return err
		}
	}
	return nil
}

// EmbedMemories embeds and stores the vectors of memories another tool
// has just written (sync-knowledge's pointer memories), as add-memory does
// for its own: batched, within half the call's time left. An error means
// some were not embedded: they are stored all the same, and the
// background filler embeds them later. Without an embedder or a store that
// keeps vectors it does nothing.
func (s *Service) EmbedMemories(ctx context.Context, ms []store.Memory) error {
	if s.vec == nil || len(ms) == 0 {
		return nil
	}
	err := s.vec.onWrite(ctx, ms)
	if err != nil {
		s.log.WarnContext(ctx, "embedding written memories failed; they are stored and will be embedded later", "count", len(ms), "error", err)
	}
	return err
}

// rebuild loads every stored vector of the model into the index.
func (v *vectors) rebuild(ctx context.Context) error {
	defer v.readyOnce.Do(func() { close(v.ready) })
	return v.vs.ScanVectors(ctx, v.model, func(mv store.MemoryVector) error {
		return v.index.Put(vecindex.Scope{Tenant: mv.Tenant, Layer: mv.Layer, ScopeID: mv.ScopeID}, mv.ID, mv.Vec)
	})
}

// fill embeds every memory without a vector of the model, fillBatch at a
// time, calling progress after each batch. It stops at the first failure;
// what was stored stays, so a later call resumes.
func (v *vectors) fill(ctx context.Context, progress func(embedded int)) (int, error) {
	var cur store.VectorCursor
	total := 0
	for {
		ms, err := v.vs.PendingVectors(ctx, v.model, cur, fillBatch)
		if err != nil || len(ms) == 0 {
			return total, err
		}
		last := ms[len(ms)-1]
		cur = store.VectorCursor{Tenant: last.Tenant, ID: last.ID}
		texts := make([]string, len(ms))
		for i, m := range ms {
			texts[i] = m.Content
		}
		vecs, err := v.emb.Embed(ctx, texts)
		if err == nil && len(vecs) != len(ms) {
			err = fmt.Errorf("embeddings: got %d vectors for %d texts", len(vecs), len(ms))
		}
		if err != nil {
			return total, err
		}
		n, err := v.store(ctx, ms, vecs)
		total += n
		if err != nil {
			return total, err
		}
		if progress != nil {
			progress(total)
		}
	}
}

// RunVectors rebuilds the vector index from the store, then embeds
// memories that have no vector of the model (at once, every minute, and
// soon after a write could not be embedded) until ctx ends. Without an
// embedder or a vector store it returns at once. Server wiring runs it in
// a goroutine.
func (s *Service) RunVectors(ctx context.Context) {
	v := s.vec
	if v == nil {
		return
	}
	// The feed's cursor is taken before the rebuild reads the store, so
	// that no other replica's write falls between the two.
	if feed, ok := v.vs.(store.VectorFeed); ok && s.syncEvery > 0 {
		cur, err := feed.VectorFeedStart(ctx)
		if err != nil {
			s.log.ErrorContext(ctx, "vector index: the store's change feed cannot be read; other replicas' writes will not be searched by meaning", "error", err)
		} else {
			done := make(chan struct{})
			defer func() { <-done }()
			go func() {
				defer close(done)
				<-v.ready
				s.follow(ctx, feed, cur)
			}()
		}
	}
	if err := v.rebuild(ctx); err != nil && ctx.Err() == nil {
		s.log.ErrorContext(ctx, "vector index: rebuild from the store failed; searching the vectors written from now on", "error", err)
	}
	s.log.InfoContext(ctx, "vector index ready", "model", v.model, "vectors", v.index.Len())
	periodic.Run(ctx, fillInterval, func(ctx context.Context) {
		n, err := v.fill(ctx, nil)
		if ctx.Err() != nil {
			return
		}
		if n > 0 {
			s.log.InfoContext(ctx, "vector filler: memories embedded", "model", v.model, "count", n)
		}
		if err != nil {
			s.log.WarnContext(ctx, "vector filler: embedding failed; will retry", "error", err)
			select { // at most once per fillRetry, however often a write kicks
			case <-ctx.Done():
			case <-time.After(fillRetry):
			}
		}
	}, periodic.Now(), periodic.Wake(v.kick))
}

// follow applies the store's feed of vector changes to the index every
// s.syncEvery until ctx ends: other replicas' writes, and this one's
// again (applying a change is idempotent: the index takes the store's
// current vector, or drops the memory's).
func (s *Service) follow(ctx context.Context, feed store.VectorFeed, cur store.VectorFeedCursor) {
	v := s.vec
	pruned := time.Now()
	periodic.Run(ctx, s.syncEvery, func(ctx context.Context) {
		for {
			cs, next, err := feed.VectorChanges(ctx, v.model, cur, feedBatch)
			if err != nil {
				if ctx.Err() == nil {
					s.log.WarnContext(ctx, "vector index: reading the store's change feed failed; will retry", "error", err)
				}
				break
			}
			for _, c := range cs {
				if c.Vec == nil {
					v.index.Remove(c.Tenant, c.ID)
					continue
				}
				if err := v.index.Put(vecindex.Scope{Tenant: c.Tenant, Layer: c.Layer, ScopeID: c.ScopeID}, c.ID, c.Vec); err != nil {
					s.log.WarnContext(ctx, "vector index: a vector from the change feed was not indexed", "id", c.ID, "error", err)
				}
			}
			cur = next
			if len(cs) < feedBatch {
				break
			}
		}
		if time.Since(pruned) >= feedPruneEvery {
			pruned = time.Now()
			if err := feed.PruneVectorFeed(ctx, feedRetention); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "vector index: pruning the store's change feed failed", "error", err)
			}
		}
	})
}

// ErrNoVectors is returned by Reembed when the service has no embedder or
// its store keeps no vectors.
var ErrNoVectors = errors.New("memory: no embeddings provider, or a store without vectors")

// Progress is a report of Reembed.
type Progress struct {
	// Model names the embedding model.
	Model string
	// Done counts memories with a vector of Model; Total all memories.
	Done, Total int
}

// Reembed embeds, with the configured model, every memory that has no
// vector of it, reporting progress after each batch. It is resumable:
// what an interrupted run stored is kept, and the next run does the rest.
func (s *Service) Reembed(ctx context.Context, progress func(Progress)) (Progress, error) {
	v := s.vec
	if v == nil {
		return Progress{}, ErrNoVectors
	}
	report := func() (Progress, error) {
		done, total, err := v.vs.VectorProgress(ctx, v.model)
		return Progress{Model: v.model, Done: done, Total: total}, err
	}
	p, err := report()
	if err != nil {
		return p, err
	}
	if progress != nil {
		progress(p)
	}
	base := p.Done
	_, err = v.fill(ctx, func(n int) {
		if progress != nil {
			progress(Progress{Model: v.model, Done: min(base+n, p.Total), Total: p.Total})
		}
	})
	if err != nil {
		return p, err
	}
	return report()
}

// vectorHit is a memory found among the nearest vectors.
type vectorHit struct {
	m      store.Memory
	cosine float64
}

// nearResult is what nearest found.
type nearResult struct {
	// qv is the query's vector.
	qv []float32
	// cos is the cosine of every memory nearest to the query within the
	// scopes, by id, whether or not its row passed the filters.
	cos map[string]float64
	// hits are the nearest memories that pass the full-text search's
	// filters (tags, orphans), nearest first.
	hits []vectorHit
	err  error
}

// nearest embeds the query and returns the memories nearest to it within
// scopes, fetched and filtered as the full-text search filters (tags,
// orphans). It needs nothing of the full-text search, so search runs the
// two at once; the rows of nearest memories that are full-text candidates
// too are read twice, a few rows, instead of waiting for the full-text
// search to say which.
//
// Its span (memory.nearest) has one child for each step: embedding the
// query, the index's search and reading the rows.
func (v *vectors) nearest(ctx context.Context, tenant string, scopes []store.Scope, tags []string, text string) (res nearResult) {
	ctx, span := spans.Start(ctx, "memory.nearest")
	defer func() {
		if res.err != nil {
			spans.Fail(span, "nearest")
		} else if span.IsRecording() {
			span.SetAttributes(attribute.Int("toolsvc.memory.nearest", len(res.cos)), attribute.Int("toolsvc.memory.nearest_kept", len(res.hits)))
		}
		span.End()
	}()
	ectx, cancel := withHalfDeadline(ctx, 0)
	defer cancel()
	ectx, step := spans.Start(ectx, "memory.embed_query")
	qv, err := embedOne(ectx, v.emb, text)
	if err != nil {
		spans.Fail(step, "embedder")
	}
	step.End()
	if err != nil {
		return nearResult{err: err}
	}
	iscopes := make([]vecindex.Scope, len(scopes))
	want := map[vecindex.Scope]bool{}
	for i, sc := range scopes {
		iscopes[i] = vecindex.Scope{Tenant: tenant, Layer: sc.Layer, ScopeID: sc.ScopeID}
		want[iscopes[i]] = true
	}
	_, step = spans.Start(ctx, "memory.vector_index")
	found := v.index.Search(qv, iscopes, vectorCandidates)
	step.End()
	cos := make(map[string]float64, len(found))
	ids := make([]string, len(found))
	for i, h := range found {
		cos[h.ID] = h.Cosine
		ids[i] = h.ID
	}
	if len(ids) == 0 {
		return nearResult{qv: qv, cos: cos}
	}
	rctx, step := spans.Start(ctx, "memory.nearest_rows")
	ms, err := v.vs.GetMemories(rctx, tenant, ids)
	if err != nil {
		spans.Fail(step, "store")
	}
	step.End()
	if err != nil {
		return nearResult{err: err}
	}
	hits := make([]vectorHit, 0, len(ms))
	for _, m := range ms {
		// The index is filtered by scope already; the store's row is the
		// truth, so its scope is checked again.
		if !want[scopeOf(m)] || m.Orphaned || !hasAll(m.Tags, tags) {
			continue
		}
		hits = append(hits, vectorHit{m: m, cosine: cos[m.ID]})
	}
	// The store answers in no particular order; the nearest come first.
	slices.SortFunc(hits, cmpHit)
	return nearResult{qv: qv, cos: cos, hits: hits}
}

func cmpHit(a, b vectorHit) int {
	switch {
	case a.cosine > b.cosine:
		return -1
	case a.cosine < b.cosine:
		return 1
	}
	return strings.Compare(a.m.ID, b.m.ID)
}

func hasAll(have, want []string) bool {
	for _, t := range want {
		if !slices.Contains(have, t) {
			return false
		}
	}
	return true
}

// ModelName is the name recorded with the vectors e makes.
func ModelName(e Embedder) string { return modelName(e) }
