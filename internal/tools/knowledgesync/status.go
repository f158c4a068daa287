package knowledgesync

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

// GetSyncStatus reports the caller's tenant's sync health: healthy means
// the last sync started within the max age (WithMaxAge, default 24h) and
// had no failures.
func (s *Service) GetSyncStatus(ctx context.Context, _ *syncv1.GetSyncStatusRequest) (*syncv1.GetSyncStatusResponse, error) {
	caller, err := scope.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.st.SyncStats(ctx, caller.Tenant)
	if err != nil {
		return nil, scope.StoreError(err, "sync stats not found", nil)
	}
	now := s.now()
	data := &syncv1.GetSyncStatusData{
		TimeSinceSync: "never",
		Stats: &syncv1.SyncStats{
			TotalSyncs: uint32(st.TotalSyncs), TotalItemsSynced: uint32(st.TotalItemsSynced),
			AvgSyncDurationMs: st.AvgDurationMs,
		},
		Failures: []*syncv1.SyncFailure{},
	}
	pending := s.pendingChanges(ctx, caller)
	data.PendingChanges = pending
	data.KnowledgeSet = s.knowledgeSet()
	h := hints.New().Validity(hints.ValidShort)
	if n := pending.GetAdded() + pending.GetModified() + pending.GetRemoved(); n > 0 {
		h.Warn("validation", hints.Medium, fmt.Sprintf("%d knowledge file(s) changed on disk since the last sync (%d added, %d modified, %d removed)",
			n, pending.GetAdded(), pending.GetModified(), pending.GetRemoved()), "run sync-knowledge to serve them")
	}
	if e := data.KnowledgeSet.GetReloadError(); e != "" {
		h.Warn("validation", hints.High, "this replica could not reload the knowledge set: "+e,
			"the operator fixes the knowledge directory; this replica serves its last good set meanwhile")
	}
	if st.LastRun == nil {
		h.Evidence(hints.Evidence{Name: "syncs recorded", Value: 0, Weight: 1}).
			Quality(hints.QualityLow).
			Next(toolSync, hints.High, "Knowledge was never synced into memory in this tenant: sync now.",
				hints.WithArgs(map[string]any{}), hints.WithCategory("correction")).
			Impact(0.8, 0.3, "knowledge freshness").
			Reason("No sync has run in this tenant.")
		return &syncv1.GetSyncStatusResponse{Data: data, AgentHints: h.Build(generatedBy + toolStatus)}, nil
	}

	last := st.LastRun
	age := now.Sub(last.StartedAt)
	recent := age <= s.maxAge
	data.Healthy = recent && last.Failures == 0
	data.LastSyncAt = timestamppb.New(last.StartedAt)
	data.TimeSinceSync = HumanSince(age)
	// The run may have been another team's: list only the failures of
	// items this caller sees, and of files (which are the tenant's).
	failed := s.visibleFailures(caller, last.FailedItems)
	data.FailedItems = uint32(len(failed))
	data.Failures = toFailures(failed)

	freshness := max(0, 1-age.Seconds()/s.maxAge.Seconds())
	clean := 1.0
	if n := last.Added + last.Updated + last.Unchanged + last.Failures; n > 0 {
		clean = float64(n-last.Failures) / float64(n)
	}
	h.Evidence(
		hints.Evidence{Name: "freshness of the last sync within the max age", Value: freshness, Weight: 1},
		hints.Evidence{Name: "items of the last sync without failure", Value: clean, Weight: 1},
	)
	h.Related("sync-run", fmt.Sprint(last.ID), "last sync "+data.TimeSinceSync, 1, nil)
	switch {
	case data.Healthy:
		h.Quality(hints.QualityHigh).Impact(0.1, 0.1, "knowledge freshness").
			Reason("Last sync %s with no failures (max age %s).", data.TimeSinceSync, s.maxAge)
	default:
		h.Quality(hints.QualityMedium).Impact(0.7, 0.3, "knowledge freshness")
		if !recent {
			h.Warn("validation", hints.Medium, fmt.Sprintf("the last sync is older than %s", s.maxAge), "run sync-knowledge")
		}
		if last.Failures > 0 {
			for _, f := range failed {
				if f.ItemID != "" {
					h.Related("knowledge-item", f.ItemID, f.Path, 0.8, nil)
				}
			}
			h.Risk("accuracy", hints.Medium, fmt.Sprintf("%d item(s) failed in the last sync of this tenant; memory misses them.", last.Failures),
				0.8, 0.5, "Fix the failures listed and sync again.")
		}
		h.Next(toolSync, hints.High, "Sync knowledge into memory again.", hints.WithArgs(map[string]any{}),
			hints.WithCategory("correction"))
		h.Reason("Unhealthy: last sync %s (max age %s), %d failure(s).", data.TimeSinceSync, s.maxAge, last.Failures)
	}
	return &syncv1.GetSyncStatusResponse{Data: data, AgentHints: h.Build(generatedBy + toolStatus)}, nil
}

// pendingFreshness is how old the pending changes get-sync-status reports
// may be: finding them walks the tenant's knowledge directory and stats
// every file, which would otherwise be most of the cost of this status
// query (BENCHMARKS.md, where get-sync-status is the load's tool). A new
// load (a sync, another replica's version) starts afresh at once.
const pendingFreshness = time.Second

// pendingMemo keeps the last pending changes of each tenant of one
// library. Callers wait for one walk instead of each doing their own.
type pendingMemo struct {
	mu      sync.Mutex
	lib     *kb.Library
	tenants map[string]pendingEntry
}

type pendingEntry struct {
	at      time.Time
	changes []kb.FileChange
}

// get returns lib's pending changes of tenant, at most pendingFreshness
// old; errors are not remembered.
func (m *pendingMemo) get(lib *kb.Library, tenant string) ([]kb.FileChange, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lib != lib {
		m.lib, m.tenants = lib, map[string]pendingEntry{}
	}
	if e, ok := m.tenants[tenant]; ok && time.Since(e.at) < pendingFreshness {
		return e.changes, nil
	}
	changes, err := lib.PendingChanges(tenant)
	if err != nil {
		return nil, err
	}
	m.tenants[tenant] = pendingEntry{at: time.Now(), changes: changes}
	return changes, nil
}

// maxPendingListed bounds the files get-sync-status lists as pending.
const maxPendingListed = 100

// pendingChanges returns the caller's tenant's knowledge files changed on
// disk since the set served was loaded; empty without a knowledge source
// or when the directory cannot be read now (the next sync says why).
func (s *Service) pendingChanges(ctx context.Context, caller scope.Caller) *syncv1.PendingChanges {
	out := &syncv1.PendingChanges{Files: []*syncv1.PendingChange{}}
	if s.src == nil {
		return out
	}
	changes, err := s.pending.get(s.src.Library(), caller.Tenant)
	if err != nil {
		s.logger.WarnContext(ctx, "pending knowledge changes not read", slog.String("error", err.Error()))
		return out
	}
	for _, c := range changes {
		switch c.Change {
		case kb.FileAdded:
			out.Added++
		case kb.FileModified:
			out.Modified++
		case kb.FileRemoved:
			out.Removed++
		}
		if len(out.Files) < maxPendingListed {
			out.Files = append(out.Files, &syncv1.PendingChange{Path: c.Path, Change: c.Change})
		}
	}
	out.Truncated = len(changes) > maxPendingListed
	return out
}

// knowledgeSet describes the set this replica serves.
func (s *Service) knowledgeSet() *syncv1.KnowledgeSetInfo {
	out := &syncv1.KnowledgeSetInfo{}
	if s.src == nil {
		return out
	}
	r, ok := s.src.(Replica)
	if !ok {
		out.Digest = s.src.Library().Digest()
		return out
	}
	st := r.State()
	out.Version, out.Digest, out.ReloadError = uint64(max(st.Version, 0)), st.Digest, st.ReloadError
	if !st.LoadedAt.IsZero() {
		out.LoadedAt = timestamppb.New(st.LoadedAt)
	}
	return out
}

// HumanSince renders an elapsed time as a person would say it: "just now",
// "1 minute ago", "3 hours ago", "2 days ago". A negative duration (a clock
// behind the store's) is "just now".
func HumanSince(d time.Duration) string {
	unit := func(n int64, one string) string {
		if n == 1 {
			return "1 " + one + " ago"
		}
		return fmt.Sprintf("%d %ss ago", n, one)
	}
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return unit(int64(d/time.Minute), "minute")
	case d < 24*time.Hour:
		return unit(int64(d/time.Hour), "hour")
	default:
		return unit(int64(d/(24*time.Hour)), "day")
	}
}

// visibleFailures keeps the failures of files (the tenant's) and of items
// the caller sees: a sync run may have been another team's. Without a
// knowledge source (a bare status service) no item is visible.
func (s *Service) visibleFailures(caller scope.Caller, fs []store.SyncFailure) []store.SyncFailure {
	var out []store.SyncFailure
	for _, f := range fs {
		if f.ItemID == "" {
			out = append(out, f)
			continue
		}
		if s.src == nil {
			continue
		}
		lib := s.src.Library()
		if it, ok := lib.For(caller.Tenant).Get(f.ItemID); ok && viewerOf(lib, caller).Sees(it) {
			out = append(out, f)
		}
	}
	return out
}
