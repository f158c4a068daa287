package knowledgesync

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

// DefaultMaxAge is how recent the last sync must be for get-sync-status to
// call sync healthy.
const DefaultMaxAge = 24 * time.Hour

const (
	generatedBy = "toolsvc/"
	toolSync    = "sync-knowledge"
	toolStatus  = "get-sync-status"
	// Keys of a pointer memory's metadata.
	metaPath, metaType, metaStatus = "path", "type", "status"
)

// Reloader reloads the knowledge directory; *knowledge.Dir of package
// internal/tools/knowledge implements it.
type Reloader interface {
	// Reload loads the directory again and makes it current (on every
	// replica, once shared).
	Reload(ctx context.Context) (*kb.Library, []kb.LoadError, error)
	// Library returns the last loaded library.
	Library() *kb.Library
}

// Replica is implemented by a Reloader that serves as one replica of a
// deployment (*knowledge.Dir of package internal/tools/knowledge):
// get-sync-status reports the set it serves.
type Replica interface {
	State() knowledge.ReplicaState
}

// Service implements syncv1.SyncServiceServer.
type Service struct {
	syncv1.UnimplementedSyncServiceServer
	src    Reloader
	st     store.Store
	maxAge time.Duration
	now    func() time.Time
	emb    MemoryEmbedder
	logger *slog.Logger
	// pending remembers each tenant's pending changes for
	// pendingFreshness, per knowledge library.
	pending pendingMemo
}

// MemoryEmbedder stores the vectors of memories just written, as
// add-memory does for its own (*memory.Service implements it): batched,
// within the call's deadline, and on failure left to a background filler
// (the memories are stored all the same).
type MemoryEmbedder interface {
	EmbedMemories(ctx context.Context, ms []store.Memory) error
}

var _ syncv1.SyncServiceServer = (*Service)(nil)

// Option configures a Service.
type Option func(*Service)

// WithMaxAge sets how recent the last sync must be to be healthy. The
// default is DefaultMaxAge (24h); d <= 0 keeps it.
func WithMaxAge(d time.Duration) Option {
	return func(s *Service) {
		if d > 0 {
			s.maxAge = d
		}
	}
}

// WithClock sets the clock get-sync-status measures ages with. The default
// is time.Now.
func WithClock(now func() time.Time) Option {
	return func(s *Service) {
		if now != nil {
			s.now = now
		}
	}
}

// WithMemoryEmbedder embeds the pointer memories a sync writes, so that a
// search by meaning finds them at once. The default is none: pointers are
// found by their words until something else embeds them.
func WithMemoryEmbedder(e MemoryEmbedder) Option { return func(s *Service) { s.emb = e } }

// WithLogger sets the logger of what the tools cannot tell a caller. The
// default discards.
func WithLogger(l *slog.Logger) Option {
	return func(s *Service) {
		if l != nil {
			s.logger = l
		}
	}
}

// New returns the sync tools, syncing from src into st.
func New(src Reloader, st store.Store, opts ...Option) *Service {
	s := &Service{src: src, st: st, maxAge: DefaultMaxAge, now: time.Now, logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// layerOf maps a knowledge layer to the memory layer of its pointer.
func layerOf(l string) store.Layer {
	switch l {
	case kb.LayerCompany:
		return store.LayerCompany
	case kb.LayerOrg:
		return store.LayerOrg
	case kb.LayerTeam:
		return store.LayerTeam
	case kb.LayerProject:
		return store.LayerProject
	}
	return ""
}

// PointerContent is the text of an item's pointer memory: type and title,
// summary, blocking constraints and the item id, so that a memory search
// for the item's subject finds it and tells the agent where to look.
func PointerContent(it *kb.Item) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s", it.Type, it.Title)
	if it.Summary != "" {
		fmt.Fprintf(&b, "\n%s", it.Summary)
	}
	first := true
	for _, c := range it.Constraints {
		if c.Severity != kb.SeverityBlock {
			continue
		}
		if first {
			b.WriteString("\nBlocking constraints:")
			first = false
		}
		fmt.Fprintf(&b, "\n- %s %s %q", c.Operator, c.Target, c.Pattern)
		if c.Message != "" {
			fmt.Fprintf(&b, ": %s", c.Message)
		}
	}
	fmt.Fprintf(&b, "\nKnowledge item: %s (%s)", it.ID, it.Status)
	return b.String()
}

type counts struct{ added, updated, deleted, unchanged int }

// SyncKnowledge reloads the knowledge directory and brings the caller's
// tenant's pointer memories in line with it; see the package documentation.
// Per-item problems (a malformed file, a layer whose identifier the caller
// lacks, a failed write) are failures in the result; the sync goes on.
func (s *Service) SyncKnowledge(ctx context.Context, req *syncv1.SyncKnowledgeRequest) (*syncv1.SyncKnowledgeResponse, error) {
	caller, err := scope.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	lib, allErrs, err := s.src.Reload(ctx)
	if err != nil {
		return nil, toolerr.Wrap(err, toolerr.ProviderError, "the knowledge directory cannot be read")
	}
	// The caller's knowledge: its tenant's set, the items its ids see, and
	// the load errors of its own tenant's files (another tenant's file
	// names are that tenant's business).
	set := lib.For(caller.Tenant)
	viewer := viewerOf(lib, caller)
	var loadErrs []kb.LoadError
	for _, le := range allErrs {
		if le.Tenant == caller.Tenant || lib.Development() {
			loadErrs = append(loadErrs, le)
		}
	}
	existing, err := s.st.ListPointers(ctx, caller.Tenant)
	if err != nil {
		return nil, scope.StoreError(err, "pointers not found", nil)
	}
	pointers := make(map[string]store.Memory, len(existing))
	for _, p := range existing {
		pointers[p.KnowledgeItemID] = p
	}
	inFilter := func(typ string, layer string) bool {
		return (len(req.GetTypes()) == 0 || slices.Contains(req.GetTypes(), typ)) &&
			(len(req.GetLayers()) == 0 || slices.Contains(req.GetLayers(), layer))
	}

	var (
		c        counts
		failures []store.SyncFailure
		written  []store.Memory
	)
	for _, le := range loadErrs {
		failures = append(failures, store.SyncFailure{Path: le.Path, Reason: le.Reason})
	}
	var items []*kb.Item
	for _, it := range set.Visible(viewer) {
		if inFilter(it.Type, it.Layer) {
			items = append(items, it)
		}
	}
	total := float64(len(items))
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		callctx.Progress(ctx, float64(i), total, "syncing "+it.ID)
		f, err := s.syncItem(ctx, caller, it, pointers, req.GetForce(), &c, &written)
		if err != nil {
			return nil, err
		}
		if f != nil {
			failures = append(failures, *f)
		}
	}
	var embedErr error
	if s.emb != nil && len(written) > 0 {
		callctx.Progress(ctx, total, total, "embedding pointers")
		embedErr = s.emb.EmbedMemories(ctx, written)
	}
	callctx.Progress(ctx, total, total, "marking removed items")

	// Orphan the pointers of items that are gone, unless their file is
	// merely malformed now, or the filters exclude them.
	malformed := map[string]bool{}
	for _, le := range loadErrs {
		malformed[le.Path] = true
	}
	var removed []string
	for _, p := range existing {
		if p.Orphaned {
			continue
		}
		if _, still := set.Get(p.KnowledgeItemID); still {
			// Synced above, or an item this caller does not see (another
			// team's): its pointer is not this caller's to retire.
			continue
		}
		path, _ := p.Metadata[metaPath].(string)
		typ, _ := p.Metadata[metaType].(string)
		if malformed[path] || !inFilter(typ, string(p.Layer)) {
			continue
		}
		removed = append(removed, p.KnowledgeItemID)
	}
	if len(removed) > 0 {
		n, err := s.st.MarkOrphaned(ctx, caller.Tenant, removed)
		if err != nil {
			return nil, scope.StoreError(err, "pointers not found", nil)
		}
		c.deleted = n
		for _, id := range removed {
			v := &store.ItemVersion{Tenant: caller.Tenant, ItemID: id, Hash: pointers[id].ContentHash,
				Change: store.ChangeRemoved, Author: caller.IDs[scope.KeyUserID], Message: "item removed from the knowledge directory"}
			if err := s.st.AppendItemVersion(ctx, v); err != nil {
				return nil, scope.StoreError(err, "item not found", nil)
			}
		}
	}

	dur := time.Since(start)
	run := &store.SyncRun{
		Tenant: caller.Tenant, StartedAt: start, DurationMs: dur.Milliseconds(),
		Added: c.added, Updated: c.updated, Deleted: c.deleted, Unchanged: c.unchanged,
		Failures: len(failures), FailedItems: failures, Forced: req.GetForce(),
	}
	if err := s.st.RecordSyncRun(ctx, run); err != nil {
		return nil, scope.StoreError(err, "sync run not found", nil)
	}
	callctx.Progress(ctx, total, total, "done")

	data := &syncv1.SyncKnowledgeData{
		Success: len(failures) == 0,
		Result: &syncv1.SyncCounts{Added: uint32(c.added), Updated: uint32(c.updated), Deleted: uint32(c.deleted),
			Unchanged: uint32(c.unchanged), Failures: uint32(len(failures))},
		DurationMs:  float64(dur.Microseconds()) / 1000,
		FailedItems: toFailures(failures),
	}
	data.Message = fmt.Sprintf("Synced %d item(s): %d added, %d updated, %d removed, %d unchanged, %d failed.",
		len(items), c.added, c.updated, c.deleted, c.unchanged, len(failures))
	h := syncHints(len(items), c, failures)
	if embedErr != nil {
		h.Warn("performance", hints.Low, "the pointers are stored, but the embeddings endpoint failed: until they are embedded in the background, only their words find them",
			"check the embeddings server")
	}
	return &syncv1.SyncKnowledgeResponse{Data: data, AgentHints: h.Build(generatedBy + toolSync)}, nil
}

// syncItem upserts the pointer of one item when it changed (or always with
// force), and appends what it wrote to written (to be embedded). It returns
// a failure for an item it cannot sync, and an error only when the store
// is unavailable.
func (s *Service) syncItem(ctx context.Context, caller scope.Caller, it *kb.Item, pointers map[string]store.Memory,
	force bool, c *counts, written *[]store.Memory) (*store.SyncFailure, error) {
	layer := layerOf(it.Layer)
	scopeID, ok := caller.ScopeID(layer)
	if !ok {
		return &store.SyncFailure{ItemID: it.ID, Path: it.Path, Reason: scope.Missing(layer)}, nil
	}
	old, had := pointers[it.ID]
	same := had && !old.Orphaned && old.ContentHash == it.Hash && old.Layer == layer && old.ScopeID == scopeID
	if same && !force {
		c.unchanged++
		return nil, nil
	}
	m := &store.Memory{
		Tenant: caller.Tenant, Layer: layer, ScopeID: scopeID,
		Content:    PointerContent(it),
		Tags:       slices.Compact(slices.Sorted(slices.Values(append([]string{it.Type, "knowledge"}, it.Tags...)))),
		Metadata:   map[string]any{metaPath: it.Path, metaType: it.Type, metaStatus: it.Status},
		SourceType: store.SourceKnowledgeSync, KnowledgeItemID: it.ID, ContentHash: it.Hash,
	}
	created, err := s.st.UpsertPointer(ctx, m)
	if err != nil {
		mapped := scope.StoreError(err, "pointer not found", nil)
		if te, ok := toolerr.As(mapped); ok && te.Code == toolerr.ProviderError {
			return nil, mapped
		}
		return &store.SyncFailure{ItemID: it.ID, Path: it.Path, Reason: "the pointer memory could not be written"}, nil
	}
	*written = append(*written, *m)
	change := ""
	switch {
	case created || old.Orphaned:
		c.added++
		change = store.ChangeAdded
	default:
		c.updated++
		if old.ContentHash != it.Hash {
			change = store.ChangeUpdated
		}
	}
	if change != "" {
		v := &store.ItemVersion{Tenant: caller.Tenant, ItemID: it.ID, Hash: it.Hash, Change: change,
			Author: it.Author, Message: fmt.Sprintf("%s from %s", change, it.Path)}
		if err := s.st.AppendItemVersion(ctx, v); err != nil {
			return nil, scope.StoreError(err, "item not found", nil)
		}
	}
	return nil, nil
}

// viewerOf returns what the caller sees through: nil (everything) in
// development mode, else its org, team and project ids.
func viewerOf(lib *kb.Library, c scope.Caller) *kb.Viewer {
	if lib.Development() {
		return nil
	}
	return &kb.Viewer{OrgID: c.IDs[scope.KeyOrgID], TeamID: c.IDs[scope.KeyTeamID], ProjectID: c.IDs[scope.KeyProjectID]}
}

func toFailures(fs []store.SyncFailure) []*syncv1.SyncFailure {
	out := make([]*syncv1.SyncFailure, len(fs))
	for i, f := range fs {
		out[i] = &syncv1.SyncFailure{ItemId: f.ItemID, Path: f.Path, Reason: f.Reason}
	}
	return out
}

func syncHints(items int, c counts, failures []store.SyncFailure) *hints.Builder {
	h := hints.New().Validity(hints.ValidMedium)
	attempted := items + countLoadFailures(failures)
	ok := 1.0
	if attempted > 0 {
		ok = float64(attempted-len(failures)) / float64(attempted)
	}
	h.Evidence(hints.Evidence{Name: "items synced without failure", Value: ok, Weight: 1})
	switch {
	case len(failures) == 0:
		h.Quality(hints.QualityHigh)
	case ok >= 0.5:
		h.Quality(hints.QualityMedium)
	default:
		h.Quality(hints.QualityLow)
	}
	for i, f := range failures {
		if i == 10 {
			break
		}
		id := f.ItemID
		if id == "" {
			id = f.Path
		}
		h.Warn("validation", hints.Medium, fmt.Sprintf("%s: %s", id, f.Reason), "fix the file or supply the identifier, then sync again", id)
		if f.ItemID != "" {
			h.Related("knowledge-item", f.ItemID, f.Path, 1, nil)
		}
	}
	if len(failures) > 0 {
		h.Next(toolSync, hints.High, "Sync again after fixing the failed items.", hints.WithCategory("correction"),
			hints.WithArgs(map[string]any{}))
		h.Risk("accuracy", hints.Medium, "Memory does not reflect the failed items.", 1, 0.5,
			"Fix the reported files or identifiers and sync again.")
	}
	if c.added+c.updated > 0 {
		h.Next("search-memories", hints.Low, "Search memory to see the refreshed knowledge pointers.",
			hints.WithArgs(map[string]any{"query": "knowledge"}), hints.WithCategory("exploration"))
	}
	h.Next(toolStatus, hints.Low, "Check the overall sync health.", hints.WithCategory("exploration"))
	h.Assume("Changes are detected by the items' content hash; pointers of malformed files are kept, not orphaned.")
	h.Impact(0.4+0.5*ok, 0.2, "knowledge freshness")
	h.Reason("%d item(s) considered: %d added, %d updated, %d orphaned, %d unchanged, %d failure(s).",
		items, c.added, c.updated, c.deleted, c.unchanged, len(failures))
	return h
}

func countLoadFailures(fs []store.SyncFailure) int {
	n := 0
	for _, f := range fs {
		if f.ItemID == "" {
			n++
		}
	}
	return n
}

// SystemActor is the subject of the automatic sync (--sync-interval): the
// author of what it records and the subject of its audit records, never a
// user.
const SystemActor = "system:sync"

// AsSystem returns ctx for the automatic sync of tenant, outside the
// interceptor chain: the system actor, with no org, team or project, so
// it syncs what the whole tenant sees (company items, and items without an
// owner in the single-tenant layout); pointers of org, team and project
// items are synced by callers carrying those identifiers.
func AsSystem(ctx context.Context, tenant string) context.Context {
	return scope.WithCaller(ctx, scope.Caller{Tenant: tenant, IDs: map[string]string{scope.KeyUserID: SystemActor}})
}

// WithTenant returns ctx for calling the sync tools directly, outside the
// interceptor chain, as a caller of tenant: for a benchmark baseline that
// serves the tool on a bare server (bench/baselines). Inside the chain it
// has no effect: the authenticated principal's tenant wins.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return scope.WithCaller(ctx, scope.Caller{Tenant: tenant})
}
