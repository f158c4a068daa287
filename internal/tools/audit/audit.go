// Package audit implements list-audit-events (docs/CONTRACTS.md): the caller's
// tenant's audit trail, newest first, filtered and paged, as the generated
// auditv1.AuditServiceServer.
package audit

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/paging"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
)

// DefaultLimit is the page size when page.limit is 0.
const DefaultLimit = store.DefaultAuditLimit

const toolList = "list-audit-events"

// Service implements auditv1.AuditServiceServer.
type Service struct {
	auditv1.UnimplementedAuditServiceServer
	st store.AuditStore
}

var _ auditv1.AuditServiceServer = (*Service)(nil)

// New returns the audit tool reading st.
func New(st store.AuditStore) *Service { return &Service{st: st} }

// ListAuditEvents lists one page of the caller's tenant's audit events,
// newest first, filtered by tool, subject, decision and time range (both
// ends inclusive). page.limit 0 means DefaultLimit (50); page.offset is
// ignored; a cursor from another filter or a malformed one is
// INVALID_INPUT on page.cursor.
func (s *Service) ListAuditEvents(ctx context.Context, req *auditv1.ListAuditEventsRequest) (*auditv1.ListAuditEventsResponse, error) {
	caller, err := scope.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	limit := int(req.GetPage().GetLimit())
	if limit == 0 {
		limit = DefaultLimit
	}
	ps, sealed := s.st.(store.PageStore)
	principal, query := paging.Principal(caller), listFingerprint(req)
	cursor := req.GetPage().GetCursor()
	if sealed && cursor != "" {
		if cursor, err = paging.Unseal(ctx, ps, "page.cursor", cursor, principal, query); err != nil {
			return nil, scope.StoreError(err, "cursor key not found", nil)
		}
	}
	f := store.AuditFilter{
		Tenant: caller.Tenant, Tool: req.GetTool(), Subject: req.GetSubject(), Decision: req.GetDecision(),
		Limit: limit, Cursor: cursor,
	}
	if r := req.GetRange(); r != nil {
		if r.GetFrom() != nil {
			f.Since = r.GetFrom().AsTime()
		}
		if r.GetTo() != nil {
			// The store's Until is exclusive and its times are truncated to
			// microseconds: one microsecond more makes "to" inclusive.
			f.Until = r.GetTo().AsTime().Truncate(time.Microsecond).Add(time.Microsecond)
		}
		if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
			return nil, toolerr.Invalid("range", "date_range.order", "from must not be after to")
		}
	}
	events, next, err := s.st.ListAudit(ctx, f)
	if err != nil {
		if errors.Is(err, store.ErrInvalidCursor) {
			return nil, toolerr.Invalid("page.cursor", "cursor.valid",
				"the cursor is malformed or belongs to another filter: repeat the first request without a cursor")
		}
		return nil, scope.StoreError(err, "audit events not found", nil)
	}
	if sealed {
		if next, err = paging.Seal(ctx, ps, next, principal, query); err != nil {
			return nil, scope.StoreError(err, "cursor key not found", nil)
		}
	}
	out := make([]*auditv1.AuditEvent, len(events))
	denied := 0
	for i, e := range events {
		out[i] = &auditv1.AuditEvent{
			Time: timestamppb.New(e.At), Tool: e.Tool, ToolVersion: e.ToolVersion, Subject: e.Subject,
			Tenant: e.Tenant, TraceId: e.TraceID, CorrelationId: e.CorrelationID, Transport: e.Transport,
			Decision: e.Decision, Reason: e.Reason, Code: e.Code, LatencyMs: e.LatencyMs,
		}
		if e.Decision == store.DecisionDeny {
			denied++
		}
	}

	h := hints.New().Validity(hints.ValidImmediate).Quality(hints.QualityHigh)
	// The log is append-only and complete; what limits confidence is how
	// much of the filtered trail this page shows.
	complete := 1.0
	if next != "" {
		complete = float64(len(events)) / float64(len(events)+limit)
	}
	h.Evidence(hints.Evidence{Name: "share of the filtered trail seen (lower bound)", Value: complete, Weight: 1},
		hints.Evidence{Name: "audit log is append-only", Value: 1, Weight: 1})
	if next != "" {
		args := map[string]any{"page": map[string]any{"limit": limit, "cursor": next}}
		for k, v := range map[string]string{"tool": f.Tool, "subject": f.Subject, "decision": f.Decision} {
			if v != "" {
				args[k] = v
			}
		}
		if r := req.GetRange(); r != nil {
			rng := map[string]any{}
			if r.GetFrom() != nil {
				rng["from"] = r.GetFrom().AsTime().Format(time.RFC3339Nano)
			}
			if r.GetTo() != nil {
				rng["to"] = r.GetTo().AsTime().Format(time.RFC3339Nano)
			}
			args["range"] = rng
		}
		h.Next(toolList, hints.Medium, "Read the next page.", hints.WithArgs(args), hints.WithCategory("exploration"))
	}
	if denied > 0 && f.Decision == "" {
		h.Next(toolList, hints.Low, "List only the denials to investigate them.",
			hints.WithArgs(map[string]any{"decision": store.DecisionDeny}), hints.WithCategory("exploration"))
	}
	if len(events) == 0 {
		h.Next(toolList, hints.Low, "Nothing matched: drop some filters.", hints.WithArgs(map[string]any{}), hints.WithCategory("exploration"))
	}
	h.Assume("Only events of your tenant are listed; inputs and secrets are never recorded.").
		Impact(0.3, 0.1, "security review").
		Reason("%s: %d event(s) on this page, %d denial(s)%s.", toolList, len(events), denied, more(next))
	return &auditv1.ListAuditEventsResponse{
		Data:       &auditv1.ListAuditEventsData{Success: true, Events: out, NextCursor: next},
		AgentHints: h.Build("toolsvc/" + toolList),
	}, nil
}

// listFingerprint identifies the filters of a listing: its cursor works
// only with the same ones (page.limit may change).
func listFingerprint(req *auditv1.ListAuditEventsRequest) string {
	return paging.Fingerprint(toolList, req, func(m proto.Message) { m.(*auditv1.ListAuditEventsRequest).Page = nil })
}

func more(next string) string {
	if next != "" {
		return ", more on the next page"
	}
	return ""
}
