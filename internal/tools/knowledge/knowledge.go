package knowledge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

// Defaults of the tools' optional fields, as the contract's field_default
// options declare them.
const (
	DefaultLimit              = 10
	DefaultMinSeverity        = kb.SeverityWarn
	DefaultIncludeConstraints = true
)

// DefaultStatuses is query-knowledge's status filter when none is given.
var DefaultStatuses = []string{kb.StatusAccepted}

const (
	generatedBy    = "toolsvc/"
	toolQuery      = "query-knowledge"
	toolShow       = "show-knowledge"
	toolCheck      = "check-knowledge"
	resourceItem   = "knowledge-item"
	catCorrection  = "correction"
	catExploration = "exploration"
)

// Service implements knowledgev1.KnowledgeServiceServer.
type Service struct {
	knowledgev1.UnimplementedKnowledgeServiceServer
	src Source
	st  store.SyncStore
}

var _ knowledgev1.KnowledgeServiceServer = (*Service)(nil)

// New returns the knowledge tools answering from src, with item histories
// from st.
func New(src Source, st store.SyncStore) *Service {
	return &Service{src: src, st: st}
}

// QueryKnowledge finds items by text, type, layer, tags and status (default
// ["accepted"]), best first, at most limit (default 10).
func (s *Service) QueryKnowledge(ctx context.Context, req *knowledgev1.QueryKnowledgeRequest) (*knowledgev1.QueryKnowledgeResponse, error) {
	caller, err := scope.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	statuses := req.GetStatus()
	if len(statuses) == 0 {
		statuses = DefaultStatuses
	}
	limit := DefaultLimit
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	if limit < 1 || limit > 100 {
		return nil, toolerr.Invalid("limit", "uint32.gte_lte", "must be between 1 and 100")
	}
	set, viewer := s.knowledgeOf(ctx, caller)
	q := kb.Query{
		Text: req.GetQuery(), Type: req.GetType(), Layer: req.GetLayer(), Tags: req.GetTags(),
		Statuses: statuses, Limit: limit, Viewer: viewer,
	}
	var (
		matches []kb.Match
		total   int
		next    string
	)
	if req.GetCursor() != "" {
		matches, total, next, err = s.nextPage(ctx, set, q, caller, req)
	} else {
		matches, total, next, err = s.firstPage(ctx, set, q, caller, req)
	}
	if err != nil {
		return nil, err
	}
	items := make([]*knowledgev1.KnowledgeSummary, len(matches))
	for i, m := range matches {
		it := m.Item
		items[i] = &knowledgev1.KnowledgeSummary{
			Id: it.ID, Type: it.Type, Layer: it.Layer, Title: it.Title, Summary: it.Summary,
			Status: it.Status, Tags: nonNil(it.Tags), HasConstraints: len(it.Constraints) > 0,
			Score: m.Score, Owner: it.Owner,
		}
	}

	h := hints.New().Validity(hints.ValidMedium)
	accepted, meanScore := 0, 0.0
	for _, m := range matches {
		meanScore += m.Score
		if m.Item.Status == kb.StatusAccepted {
			accepted++
		}
		h.Related(resourceItem, m.Item.ID, m.Item.Title, m.Score, itemMeta(m.Item))
		by := set.SupersededByFor(m.Item, viewer)
		if len(by) > 0 || m.Item.Status == kb.StatusDeprecated || m.Item.Status == kb.StatusSuperseded {
			h.Warn("deprecation", hints.Medium,
				fmt.Sprintf("%s is %s", m.Item.ID, statusWord(m.Item, by)),
				replacementFix(by), append([]string{m.Item.ID}, by...)...)
		}
	}
	acceptedShare := 0.0
	if len(matches) > 0 {
		meanScore /= float64(len(matches))
		acceptedShare = float64(accepted) / float64(len(matches))
	}
	h.Evidence(
		hints.Evidence{Name: "mean relevance of the items", Value: meanScore, Weight: 1},
		hints.Evidence{Name: "share of accepted items", Value: acceptedShare, Weight: 1},
	)
	if len(matches) == 0 {
		h.Quality(hints.QualityLow).Impact(0.1, 0.2, "compliance").
			Reason("No item with status %v matches the query and filters among the %d items this caller sees.", statuses, len(set.Visible(viewer)))
		args := map[string]any{"status": []any{"accepted", "proposed", "draft"}}
		if req.GetQuery() != "" {
			args["query"] = req.GetQuery()
		}
		h.Next(toolQuery, hints.Medium, "Broaden the search: drop the type, layer and tag filters and include proposed and draft items.",
			hints.WithArgs(args), hints.WithCategory(catExploration))
	} else {
		q := hints.QualityMedium
		if acceptedShare == 1 {
			q = hints.QualityHigh
		}
		h.Quality(q).Impact(meanScore, 0.1, "compliance").
			Reason("%d of %d matching items shown, best first (mean relevance %.2f, %d accepted).", len(matches), total, meanScore, accepted)
		top := matches[0].Item
		h.Next(toolShow, hints.Medium, "Read the most relevant item in full.",
			hints.WithArgs(map[string]any{"id": top.ID}), hints.WithCategory(catExploration))
		if slices.ContainsFunc(matches, func(m kb.Match) bool { return len(m.Item.Constraints) > 0 }) {
			h.Next(toolCheck, hints.Medium, "Check planned files and dependencies against these items' constraints.",
				hints.WithCategory(catCorrection))
		}
	}
	if req.GetQuery() == "" {
		h.Assume("Without a query every item passing the filters matches with score 1.")
	}
	if len(req.GetStatus()) == 0 {
		h.Assume("Only accepted items were searched (the default status filter).")
	}
	if next != "" {
		h.Next(toolQuery, hints.Medium, "More items match: call query-knowledge again with the same arguments and this cursor for the next page.",
			hints.WithArgs(nextPageArgs(req, next)), hints.WithCategory(catExploration),
			hints.WithOutcome("The next items of the same result set, none repeated."))
	}
	return &knowledgev1.QueryKnowledgeResponse{
		Data:       &knowledgev1.QueryKnowledgeData{Success: true, Items: items, TotalCount: uint32(total), NextCursor: next},
		AgentHints: h.Build(generatedBy + toolQuery),
	}, nil
}

// itemMeta renders an item as related-resource metadata.
func itemMeta(it *kb.Item) *toolsvcv1.ResourceMetadata {
	fresh := "current"
	if it.Status != kb.StatusAccepted {
		fresh = it.Status
	}
	return &toolsvcv1.ResourceMetadata{Category: it.Type, LastAccessed: timestamppb.New(it.UpdatedAt), Freshness: fresh}
}

func statusWord(it *kb.Item, by []string) string {
	if len(by) > 0 {
		return "superseded by " + fmt.Sprint(by)
	}
	return it.Status
}

func replacementFix(by []string) string {
	if len(by) > 0 {
		return "follow " + by[0] + " instead"
	}
	return "do not rely on it for new work"
}

// knowledgeOf returns the knowledge set of the caller's tenant and the
// viewer its org, team and project ids make: what every tool answers from,
// in the library pinned for the call (Dir.Pin) when there is one.
func (s *Service) knowledgeOf(ctx context.Context, c scope.Caller) (*kb.Set, *kb.Viewer) {
	lib := pinned(ctx)
	if lib == nil {
		lib = s.src.Library()
	}
	if lib.Development() {
		return lib.For(c.Tenant), nil
	}
	return lib.For(c.Tenant), ViewerOf(c.IDs)
}

// ViewerOf returns the knowledge viewer of a caller's identifiers (keyed
// as callctx.Facts.Identifiers).
func ViewerOf(ids map[string]string) *kb.Viewer {
	return &kb.Viewer{OrgID: ids[scope.KeyOrgID], TeamID: ids[scope.KeyTeamID], ProjectID: ids[scope.KeyProjectID]}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ShowKnowledge returns one item in full: constraints unless
// includeConstraints is false (default true), and its sync history in the
// caller's tenant when includeHistory is true (default false). An unknown
// id is NOT_FOUND with details {"requestedId", "searchedLayers"}.
func (s *Service) ShowKnowledge(ctx context.Context, req *knowledgev1.ShowKnowledgeRequest) (*knowledgev1.ShowKnowledgeResponse, error) {
	caller, err := scope.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	set, viewer := s.knowledgeOf(ctx, caller)
	// An item the caller may not see is exactly as absent as one that does
	// not exist: the same error, the same details.
	it, ok := set.GetVisible(req.GetId(), viewer)
	if !ok {
		return nil, toolerr.New(toolerr.NotFound, "Knowledge item '%s' not found", req.GetId()).
			WithDetails(map[string]any{"requestedId": req.GetId(), "searchedLayers": layersOf(set, viewer)}).
			WithNext("query-knowledge", "search the knowledge by topic: the id may be misspelt, or the item not synced yet",
				map[string]any{"query": req.GetId()})
	}
	supersededBy := set.SupersededByFor(it, viewer)
	includeConstraints := DefaultIncludeConstraints
	if req.IncludeConstraints != nil {
		includeConstraints = req.GetIncludeConstraints()
	}
	item, err := toItem(it, supersededBy, includeConstraints)
	if err != nil {
		return nil, err
	}
	data := &knowledgev1.ShowKnowledgeData{Success: true, Item: item, History: []*knowledgev1.HistoryEntry{}}

	history, err := s.st.ItemHistory(ctx, caller.Tenant, it.ID)
	if err != nil {
		return nil, scope.StoreError(err, "knowledge item history not found", nil)
	}
	if req.GetIncludeHistory() {
		for _, v := range history {
			data.History = append(data.History, &knowledgev1.HistoryEntry{
				Version:   strconv.Itoa(v.Version),
				Timestamp: timestamppb.New(v.At),
				Author:    v.Author,
				Message:   v.Message,
			})
		}
	}

	h := hints.New().Validity(hints.ValidMedium).
		Related(resourceItem, it.ID, it.Title, 1, itemMeta(it))
	accepted := 0.0
	if it.Status == kb.StatusAccepted {
		accepted = 1
	}
	// A pointer in sync means memory searches reflect this very version.
	synced := 0.0
	switch {
	case len(history) > 0 && history[len(history)-1].Hash == it.Hash && history[len(history)-1].Change != store.ChangeRemoved:
		synced = 1
	case len(history) == 0:
		h.NeedContext("the item was never synced into memory in this tenant: run sync-knowledge")
	default:
		synced = 0.5
		h.Warn("validation", hints.Low, "memory holds an older version of this item", "run sync-knowledge", it.ID)
	}
	h.Evidence(
		hints.Evidence{Name: "item is accepted", Value: accepted, Weight: 2},
		hints.Evidence{Name: "memory pointer matches this version", Value: synced, Weight: 0.5},
	)
	if accepted == 1 {
		h.Quality(hints.QualityHigh)
	} else {
		h.Quality(hints.QualityMedium).Risk("accuracy", hints.Medium,
			fmt.Sprintf("The item's status is %s: it is not in force.", it.Status), 0.6, 0.5,
			"Look for the accepted item that replaces it.")
	}
	if len(supersededBy) > 0 {
		h.Warn("deprecation", hints.High, fmt.Sprintf("%s is superseded by %v", it.ID, supersededBy),
			replacementFix(supersededBy), supersededBy...)
		for _, by := range supersededBy {
			h.Related(resourceItem, by, "supersedes "+it.ID, 0.9, nil)
		}
		h.Next(toolShow, hints.High, "Read the item that supersedes this one.",
			hints.WithArgs(map[string]any{"id": supersededBy[0]}), hints.WithCategory(catCorrection))
	}
	if _, visible := set.GetVisible(it.Supersedes, viewer); visible {
		h.Related(resourceItem, it.Supersedes, "superseded by "+it.ID, 0.5, nil)
	}
	if len(it.Constraints) > 0 && it.Status == kb.StatusAccepted {
		h.Next(toolCheck, hints.Medium, "Check planned changes against this item's constraints.",
			hints.WithArgs(map[string]any{"knowledgeItemIds": []any{it.ID}}), hints.WithCategory(catCorrection))
	}
	h.Impact(0.5+0.3*accepted, 0.1, "compliance").
		Reason("Item %s (%s, %s) with %d constraint(s); %d recorded version(s) in this tenant.",
			it.ID, it.Type, it.Status, len(it.Constraints), len(history))
	return &knowledgev1.ShowKnowledgeResponse{Data: data, AgentHints: h.Build(generatedBy + toolShow)}, nil
}

func layersOf(set *kb.Set, v *kb.Viewer) []any {
	seen := map[string]bool{}
	for _, it := range set.Visible(v) {
		seen[it.Layer] = true
	}
	var out []any
	for _, l := range []string{kb.LayerCompany, kb.LayerOrg, kb.LayerTeam, kb.LayerProject} {
		if seen[l] {
			out = append(out, l)
		}
	}
	if out == nil {
		out = []any{}
	}
	return out
}

func toItem(it *kb.Item, supersededBy []string, withConstraints bool) (*knowledgev1.KnowledgeItem, error) {
	md, err := structpb.NewStruct(it.Metadata)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("knowledge item %s: metadata is not JSON", it.ID), err)
	}
	out := &knowledgev1.KnowledgeItem{
		Id: it.ID, Type: it.Type, Layer: it.Layer, Title: it.Title, Summary: it.Summary, Content: it.Content,
		Status: it.Status, Severity: it.Severity, Tags: nonNil(it.Tags), Metadata: md,
		CreatedAt: timestamppb.New(it.CreatedAt), UpdatedAt: timestamppb.New(it.UpdatedAt),
		Supersedes: it.Supersedes, SupersededBy: nonNil(supersededBy), Owner: it.Owner,
		Constraints: []*knowledgev1.Constraint{},
	}
	if withConstraints {
		for _, c := range it.Constraints {
			out.Constraints = append(out.Constraints, &knowledgev1.Constraint{
				Operator: c.Operator, Target: c.Target, Pattern: c.Pattern,
				AppliesTo: nonNil(c.AppliesTo), Severity: c.Severity, Message: c.Message,
			})
		}
	}
	return out, nil
}

// nextPageArgs are the arguments of the next page: the request's own,
// with the cursor.
func nextPageArgs(req *knowledgev1.QueryKnowledgeRequest, cursor string) map[string]any {
	args := map[string]any{"cursor": cursor}
	set := func(k, v string) {
		if v != "" {
			args[k] = v
		}
	}
	set("query", req.GetQuery())
	set("type", req.GetType())
	set("layer", req.GetLayer())
	list := func(k string, ss []string) {
		if len(ss) > 0 {
			l := make([]any, len(ss))
			for i, s := range ss {
				l[i] = s
			}
			args[k] = l
		}
	}
	list("tags", req.GetTags())
	list("status", req.GetStatus())
	if req.Limit != nil {
		args["limit"] = req.GetLimit()
	}
	return args
}
