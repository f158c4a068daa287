package memory

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/base/words"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
)

// Defaults of the tools' optional fields, as the contract's field_default
// options declare them.
const (
	DefaultLayer            = store.LayerUser
	DefaultSourceType       = store.SourceManual
	DefaultLimit            = 10
	DefaultThreshold        = 0.7
	DefaultMaxBullets       = 5
	DefaultSummaryThreshold = 0.5
)

const (
	// summarySourceMemories bounds the memories a summary quotes from.
	summarySourceMemories = 20
	// duplicateCheckCandidates bounds the near-duplicate check of add-memory.
	duplicateCheckCandidates = 20

	generatedBy               = "toolsvc/"
	toolAdd, toolSearch       = "add-memory", "search-memories"
	toolDelete, toolSummarize = "delete-memory", "summarize-memories"
)

// Service implements memoryv1.MemoryServiceServer on a store.
type Service struct {
	memoryv1.UnimplementedMemoryServiceServer
	st             store.MemoryStore
	embedder       Embedder
	candidateLimit int
	syncEvery      time.Duration
	log            *slog.Logger
	// floor is the embedder's similarity floor (Calibrated), 0 without.
	floor float64
	// vec is the stored-vector state (vectors.go), nil without an
	// embedder or a store that keeps vectors.
	vec *vectors
}

var _ memoryv1.MemoryServiceServer = (*Service)(nil)

// Option configures a Service.
type Option func(*Service)

// WithEmbedder makes search hybrid (see Score). With a store that keeps
// vectors (store.VectorStore: both backends), add-memory stores each
// memory's vector, and search adds the memories nearest to the query in
// meaning to the full-text candidates, so that a memory sharing no word
// with the query can be found; RunVectors keeps the index. With another
// store the full-text candidates are embedded with the query on every
// search. If the embedder fails, search falls back to full text and says
// so in the hints. The default is no embedder: full text only.
func WithEmbedder(e Embedder) Option { return func(s *Service) { s.embedder = e } }

// WithCandidateLimit sets how many full-text candidates a search ranks. The
// default is store.DefaultCandidateLimit (200); values are clamped to
// 1..store.MaxCandidateLimit.
func WithCandidateLimit(n int) Option {
	return func(s *Service) { s.candidateLimit = min(max(n, 1), store.MaxCandidateLimit) }
}

// WithVectorSync makes RunVectors read, every d, the store's feed of
// vector changes (store.VectorFeed: PostgreSQL), so that memories written,
// re-embedded or deleted through other replicas sharing the database are
// found by meaning here too, not only those written by this process. The
// default is 0: no feed is read (one process, or SQLite).
func WithVectorSync(d time.Duration) Option { return func(s *Service) { s.syncEvery = max(d, 0) } }

// WithLogger sets the logger for degraded searches (embedder failures).
// The default discards everything.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// New returns the memory tools on st.
func New(st store.MemoryStore, opts ...Option) *Service {
	s := &Service{st: st, candidateLimit: store.DefaultCandidateLimit, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.embedder != nil {
		s.floor = similarityFloor(s.embedder)
	}
	s.vec = newVectors(st, s.embedder)
	return s
}

// AddMemory stores one memory in the requested layer (default user) of the
// caller's tenant, scoped by the caller's identifier for that layer. Before
// writing it looks for near-duplicates in the same scope and warns about
// them in the hints (it still stores the memory: the caller asked for it).
func (s *Service) AddMemory(ctx context.Context, req *memoryv1.AddMemoryRequest) (*memoryv1.AddMemoryResponse, error) {
	caller, err := scope.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	layer := store.Layer(req.GetLayer())
	if layer == "" {
		layer = DefaultLayer
	}
	if !layer.Valid() {
		return nil, toolerr.Invalid("layer", "string.in", "%q is not a memory layer", layer)
	}
	scopeID, ok := caller.ScopeID(layer)
	if !ok {
		return nil, caller.LayerError("add-memory", "layer", layer)
	}
	sourceType := req.GetSourceType()
	if sourceType == "" {
		sourceType = DefaultSourceType
	}
	if !slices.Contains(store.SourceTypes, sourceType) {
		return nil, toolerr.Invalid("sourceType", "string.in", "%q is not a source type", sourceType)
	}

	dups, err := s.nearDuplicates(ctx, caller.Tenant, store.Scope{Layer: layer, ScopeID: scopeID}, req.GetContent())
	if err != nil {
		return nil, err
	}
	m := &store.Memory{
		Tenant:     caller.Tenant,
		Layer:      layer,
		ScopeID:    scopeID,
		Content:    req.GetContent(),
		Tags:       req.GetTags(),
		Metadata:   req.GetMetadata().AsMap(),
		SourceType: sourceType,
	}
	if err := s.st.AddMemory(ctx, m); err != nil {
		return nil, scope.StoreError(err, "memory not found", nil)
	}
	var embedErr error
	if s.vec != nil {
		// The memory is stored: a failing provider only delays its
		// vector, which the background filler makes later.
		if embedErr = s.vec.onWrite(ctx, []store.Memory{*m}); embedErr != nil {
			s.log.WarnContext(ctx, "embedding a new memory failed; it is stored and will be embedded later", "id", m.ID, "error", embedErr)
		}
	}

	h := hints.New().
		Quality(hints.QualityHigh).
		Validity(hints.ValidLong).
		Related("memory", m.ID, label(m.Content), 1, nil).
		Assume(fmt.Sprintf("Stored in the %s layer of %s %q, from the caller's context.", layer, scope.IdentifierKey(layer), scopeID)).
		Next(toolSearch, hints.Low, "Recall it later by searching for its key words.",
			hints.WithArgs(map[string]any{"query": queryFor(m.Content), "layers": []any{string(layer)}}),
			hints.WithCategory("exploration"), hints.WithOutcome("The new memory is found."))
	novelty := 1.0
	for _, d := range dups {
		novelty = min(novelty, 1-d.similarity)
	}
	if len(dups) > 0 {
		ids := make([]string, len(dups))
		for i, d := range dups {
			ids[i] = d.id
			h.Related("memory", d.id, "near-duplicate", d.similarity, nil)
		}
		h.Warn("duplicate", hints.Medium,
			fmt.Sprintf("%d memory(ies) in the same scope say nearly the same thing", len(dups)),
			"delete-memory the older duplicate if it is outdated", ids...).
			Next(toolDelete, hints.Medium, "Delete the older near-duplicate if the new memory replaces it.",
				hints.WithArgs(map[string]any{"memoryId": ids[0]}), hints.WithCategory("optimization"), hints.Reversible(false))
	}
	if embedErr != nil {
		h.Warn("performance", hints.Low, "the memory is stored, but the embeddings endpoint failed: until it is embedded in the background, only its words find it",
			"check the embeddings server", m.ID)
	}
	if len(req.GetTags()) == 0 {
		h.NeedContext("tags would let later searches filter this memory")
	}
	tagged := 0.0
	if len(req.GetTags()) > 0 {
		tagged = 1
	}
	h.Evidence(
		hints.Evidence{Name: "write acknowledged by the store", Value: 1, Weight: 2},
		hints.Evidence{Name: "novelty against the scope's memories", Value: novelty, Weight: 1},
		hints.Evidence{Name: "tagged", Value: tagged, Weight: 0.25},
	).Impact(0.6*novelty+0.2, 0.1, "recall").
		Reason("Stored memory %s in layer %s; %d near-duplicate(s) found in the same scope.", m.ID, layer, len(dups))

	return &memoryv1.AddMemoryResponse{
		Data: &memoryv1.AddMemoryData{
			Success:  true,
			MemoryId: m.ID,
			Message:  "Memory stored successfully",
			Layer:    string(layer),
		},
		AgentHints: h.Build(generatedBy + toolAdd),
	}, nil
}

type duplicate struct {
	id         string
	similarity float64
}

// nearDuplicates returns the memories of sc whose content is a
// near-duplicate (Jaccard of stems >= 0.9) of content. A store that
// indexes each memory's near-duplicate prefix (store.NearDuplicateFinder)
// is asked for the memories sharing a prefix term, every near-duplicate
// among them; another is searched for the memories holding enough of
// content's words.
func (s *Service) nearDuplicates(ctx context.Context, tenant string, sc store.Scope, content string) ([]duplicate, error) {
	if f, ok := s.st.(store.NearDuplicateFinder); ok {
		return nearDuplicatesByPrefix(ctx, f, tenant, sc, content)
	}
	q := parseQuery(content)
	if len(q.words) == 0 {
		return nil, nil
	}
	// A near-duplicate shares at least duplicateJaccard of content's stems,
	// so the store need not fetch memories with fewer words in common.
	need := int(math.Ceil(duplicateJaccard*float64(len(q.stems)))) - (len(q.words) - len(q.stems))
	res, err := s.st.SearchMemories(ctx, store.SearchQuery{
		Tenant: tenant, Terms: q.words, Scopes: []store.Scope{sc}, CandidateLimit: duplicateCheckCandidates,
		MinMatch: need,
	})
	if err != nil {
		return nil, scope.StoreError(err, "memory not found", nil)
	}
	mine := stemSet(content)
	var out []duplicate
	for _, c := range res.Candidates {
		if j := jaccard(mine, stemSet(c.Memory.Content)); j >= duplicateJaccard {
			out = append(out, duplicate{id: c.Memory.ID, similarity: j})
		}
	}
	return out, nil
}

// nearDuplicatesByPrefix is nearDuplicates on a store.NearDuplicateFinder:
// the candidates' similarity is computed here, and the near-duplicates
// come most similar first, then newest.
func nearDuplicatesByPrefix(ctx context.Context, f store.NearDuplicateFinder, tenant string, sc store.Scope, content string) ([]duplicate, error) {
	mine := stemSet(content)
	if len(mine) == 0 {
		return nil, nil
	}
	cands, err := f.NearDuplicateCandidates(ctx, tenant, sc, content)
	if err != nil {
		return nil, scope.StoreError(err, "memory not found", nil)
	}
	var out []duplicate
	for _, c := range cands {
		if other := stemSet(c.Content); nearDuplicate(mine, other) {
			out = append(out, duplicate{id: c.ID, similarity: jaccard(mine, other)})
		}
	}
	// Stable: equal similarities stay newest first, as the store sends them.
	slices.SortStableFunc(out, func(a, b duplicate) int { return cmp.Compare(b.similarity, a.similarity) })
	if len(out) > duplicateCheckCandidates {
		out = out[:duplicateCheckCandidates]
	}
	return out, nil
}

// DeleteMemory deletes one memory of the caller's tenant. A memory in a
// layer whose scope is not the caller's (another user's, another
// session's...) is reported as NOT_FOUND, exactly like one that does not
// exist, so ids of other scopes cannot be probed.
func (s *Service) DeleteMemory(ctx context.Context, req *memoryv1.DeleteMemoryRequest) (*memoryv1.DeleteMemoryResponse, error) {
	caller, err := scope.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	id := req.GetMemoryId()
	details := map[string]any{"memoryId": id}
	notFound := fmt.Sprintf("memory %q not found", id)
	m, err := s.st.GetMemory(ctx, caller.Tenant, id)
	if err != nil {
		return nil, scope.StoreError(err, notFound, details)
	}
	if scopeID, ok := caller.ScopeID(m.Layer); !ok || scopeID != m.ScopeID {
		return nil, toolerr.New(toolerr.NotFound, "%s", notFound).WithDetails(details).
			WithNext("search-memories", "find the memory by its content: the id may be wrong or already deleted", nil)
	}
	if err := s.st.DeleteMemory(ctx, caller.Tenant, id); err != nil {
		return nil, scope.StoreError(err, notFound, details)
	}
	if s.vec != nil {
		s.vec.index.Remove(caller.Tenant, id)
	}

	h := hints.New().
		Quality(hints.QualityHigh).
		Validity(hints.ValidIndefinite).
		Evidence(hints.Evidence{Name: "delete acknowledged by the store", Value: 1, Weight: 1}).
		Impact(0.3, 0.1, "recall").
		Reason("Deleted memory %s from layer %s.", id, m.Layer).
		Risk("accuracy", hints.Low, "The deleted content cannot be recovered.", 1, 0.3,
			"Add it again with add-memory if it was deleted by mistake.")
	if m.KnowledgeItemID != "" {
		h.Warn("conflict", hints.Medium,
			fmt.Sprintf("memory %s pointed at knowledge item %q; the next sync-knowledge will recreate it", id, m.KnowledgeItemID),
			"change the knowledge item instead of its pointer", m.KnowledgeItemID).
			Related("knowledge-item", m.KnowledgeItemID, "", 1, nil)
	}
	h.Next(toolAdd, hints.Low, "If the memory was wrong rather than obsolete, store the corrected statement.",
		hints.WithArgs(map[string]any{"content": m.Content, "layer": string(m.Layer)}), hints.WithCategory("correction"))

	return &memoryv1.DeleteMemoryResponse{
		Data:       &memoryv1.DeleteMemoryData{Success: true, Message: "Memory deleted successfully"},
		AgentHints: h.Build(generatedBy + toolDelete),
	}, nil
}

// label shortens content for a related resource's display name.
func label(content string) string {
	const maxRunes = 80
	if utf8.RuneCountInString(content) <= maxRunes {
		return content
	}
	r := []rune(content)
	return string(r[:maxRunes-1]) + "…"
}

// queryFor builds a short search query from the first content words.
func queryFor(content string) string {
	ws := words.Content(content)
	if len(ws) > 6 {
		ws = ws[:6]
	}
	out := ""
	for i, w := range ws {
		if i > 0 {
			out += " "
		}
		out += w
	}
	if out == "" {
		return label(content)
	}
	return out
}
