package audit_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/audit"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
)

var base = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func seed(tb testing.TB, st store.AuditStore) {
	tb.Helper()
	events := []store.AuditEvent{
		{Tenant: "acme", Tool: "add-memory", Subject: "alice", Decision: "allow", Code: "OK"},
		{Tenant: "acme", Tool: "search-memories", Subject: "alice", Decision: "allow", Code: "OK"},
		{Tenant: "acme", Tool: "delete-memory", Subject: "bob", Decision: "deny", Reason: "read-only principal", Code: "FORBIDDEN"},
		{Tenant: "acme", Tool: "add-memory", Subject: "bob", Decision: "error", Code: "INVALID_INPUT"},
		{Tenant: "globex", Tool: "add-memory", Subject: "gina", Decision: "allow", Code: "OK"},
	}
	for i := range events {
		e := events[i]
		e.At = base.Add(time.Duration(i) * time.Minute)
		if err := st.AppendAudit(tb.Context(), &e); err != nil {
			tb.Fatal(err)
		}
	}
}

func as(tb testing.TB, tenant string) context.Context {
	tb.Helper()
	return scope.WithCaller(tb.Context(), scope.Caller{Tenant: tenant, IDs: map[string]string{}})
}

func TestListAuditEvents(t *testing.T) {
	st := teststore.SQLite(t)
	seed(t, st)
	s := audit.New(st)
	tests := []struct {
		name     string
		tenant   string
		req      *auditv1.ListAuditEventsRequest
		wantSubj []string // subjects, newest first
	}{
		{name: "tenant only, newest first", tenant: "acme", req: &auditv1.ListAuditEventsRequest{}, wantSubj: []string{"bob", "bob", "alice", "alice"}},
		{name: "other tenant", tenant: "globex", req: &auditv1.ListAuditEventsRequest{}, wantSubj: []string{"gina"}},
		{name: "by tool", tenant: "acme", req: &auditv1.ListAuditEventsRequest{Tool: "add-memory"}, wantSubj: []string{"bob", "alice"}},
		{name: "by decision", tenant: "acme", req: &auditv1.ListAuditEventsRequest{Decision: "deny"}, wantSubj: []string{"bob"}},
		{name: "by subject", tenant: "acme", req: &auditv1.ListAuditEventsRequest{Subject: "alice"}, wantSubj: []string{"alice", "alice"}},
		{name: "inclusive range", tenant: "acme", req: &auditv1.ListAuditEventsRequest{Range: &toolsvcv1.DateRange{
			From: timestamppb.New(base.Add(time.Minute)), To: timestamppb.New(base.Add(2 * time.Minute))}}, wantSubj: []string{"bob", "alice"}},
		{name: "no match", tenant: "acme", req: &auditv1.ListAuditEventsRequest{Tool: "sync-knowledge"}, wantSubj: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := s.ListAuditEvents(as(t, tc.tenant), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var subj []string
			for _, e := range resp.GetData().GetEvents() {
				subj = append(subj, e.GetSubject())
				if e.GetTenant() != tc.tenant {
					t.Errorf("event of tenant %s listed for %s", e.GetTenant(), tc.tenant)
				}
			}
			if len(subj) != len(tc.wantSubj) {
				t.Fatalf("subjects = %v, want %v", subj, tc.wantSubj)
			}
			for i := range subj {
				if subj[i] != tc.wantSubj[i] {
					t.Fatalf("subjects = %v, want %v", subj, tc.wantSubj)
				}
			}
		})
	}
}

func TestListAuditEventsPaging(t *testing.T) {
	st := teststore.SQLite(t)
	seed(t, st)
	s := audit.New(st)
	ctx := as(t, "acme")
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		resp, err := s.ListAuditEvents(ctx, &auditv1.ListAuditEventsRequest{Page: &toolsvcv1.PageRequest{Limit: 3, Cursor: cursor}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetData().GetEvents() {
			seen = append(seen, e.GetTool()+"/"+e.GetSubject())
		}
		cursor = resp.GetData().GetNextCursor()
		if cursor == "" {
			break
		}
		next := resp.GetAgentHints().GetSuggestedNextActions()[0]
		if next.GetData().GetFields()["page"].GetStructValue().GetFields()["cursor"].GetStringValue() != cursor {
			t.Errorf("hints do not carry the next cursor: %v", next)
		}
		if page > 3 {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) != 4 {
		t.Errorf("paged through %v, want the 4 acme events", seen)
	}

	_, err := s.ListAuditEvents(ctx, &auditv1.ListAuditEventsRequest{Page: &toolsvcv1.PageRequest{Cursor: "not-a-cursor"}})
	te, ok := toolerr.As(err)
	if !ok || te.Code != toolerr.InvalidInput || len(te.Violations) != 1 || te.Violations[0].GetField() != "page.cursor" {
		t.Fatalf("bad cursor: err = %v, want INVALID_INPUT on page.cursor", err)
	}
	// A cursor of one tenant is no good in another.
	resp, err := s.ListAuditEvents(ctx, &auditv1.ListAuditEventsRequest{Page: &toolsvcv1.PageRequest{Limit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListAuditEvents(as(t, "globex"), &auditv1.ListAuditEventsRequest{Page: &toolsvcv1.PageRequest{Limit: 1, Cursor: resp.GetData().GetNextCursor()}}); err == nil {
		t.Error("acme's cursor was accepted for globex")
	}
}

func TestListAuditEventsDefaultLimit(t *testing.T) {
	st := teststore.SQLite(t)
	for i := range audit.DefaultLimit + 5 {
		e := &store.AuditEvent{Tenant: "acme", Tool: "add-memory", Subject: "s", Decision: "allow", At: base.Add(time.Duration(i) * time.Second)}
		if err := st.AppendAudit(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := audit.New(st).ListAuditEvents(as(t, "acme"), &auditv1.ListAuditEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetData().GetEvents()); n != audit.DefaultLimit || resp.GetData().GetNextCursor() == "" {
		t.Errorf("events = %d (next %q), want %d and a next cursor", n, resp.GetData().GetNextCursor(), audit.DefaultLimit)
	}
}

// TestAuditCursorIsSealed: the cursor is signed for its caller and
// filters: another subject of the same tenant, other filters or an
// altered byte are each INVALID_INPUT on page.cursor; the hints' next call
// repeats every filter, the range included, and works.
func TestAuditCursorIsSealed(t *testing.T) {
	st := teststore.SQLite(t)
	seed(t, st)
	s := audit.New(st)
	alice := scope.WithCaller(t.Context(), scope.Caller{Tenant: "acme", IDs: map[string]string{"subject": "alice"}})
	bob := scope.WithCaller(t.Context(), scope.Caller{Tenant: "acme", IDs: map[string]string{"subject": "bob"}})
	rng := &toolsvcv1.DateRange{From: timestamppb.New(base), To: timestamppb.New(base.Add(time.Hour))}
	resp, err := s.ListAuditEvents(alice, &auditv1.ListAuditEventsRequest{Range: rng, Page: &toolsvcv1.PageRequest{Limit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	next := resp.GetData().GetNextCursor()
	if next == "" {
		t.Fatal("no next cursor")
	}
	refused := func(name string, ctx context.Context, req *auditv1.ListAuditEventsRequest) {
		t.Helper()
		_, err := s.ListAuditEvents(ctx, req)
		te, ok := toolerr.As(err)
		if !ok || te.Code != toolerr.InvalidInput || len(te.Violations) != 1 || te.Violations[0].GetField() != "page.cursor" {
			t.Errorf("%s: err = %v, want INVALID_INPUT on page.cursor", name, err)
		}
	}
	refused("another caller", bob, &auditv1.ListAuditEventsRequest{Range: rng, Page: &toolsvcv1.PageRequest{Limit: 1, Cursor: next}})
	refused("other filters", alice, &auditv1.ListAuditEventsRequest{Page: &toolsvcv1.PageRequest{Limit: 1, Cursor: next}})
	b := []byte(next)
	b[len(b)/2] ^= 0x01
	refused("altered", alice, &auditv1.ListAuditEventsRequest{Range: rng, Page: &toolsvcv1.PageRequest{Limit: 1, Cursor: string(b)}})

	// The hints' next call, as an agent would send it, is accepted.
	var args map[string]any
	for _, a := range resp.GetAgentHints().GetSuggestedNextActions() {
		if a.GetDescription() == "Read the next page." {
			args = a.GetData().AsMap()
		}
	}
	r, _ := args["range"].(map[string]any)
	from, err1 := time.Parse(time.RFC3339Nano, r["from"].(string))
	to, err2 := time.Parse(time.RFC3339Nano, r["to"].(string))
	if err1 != nil || err2 != nil || !from.Equal(base) || !to.Equal(base.Add(time.Hour)) {
		t.Fatalf("the next page's hint carries range %v, want the request's", args["range"])
	}
	page2, err := s.ListAuditEvents(alice, &auditv1.ListAuditEventsRequest{
		Range: &toolsvcv1.DateRange{From: timestamppb.New(from), To: timestamppb.New(to)},
		Page:  &toolsvcv1.PageRequest{Limit: 1, Cursor: args["page"].(map[string]any)["cursor"].(string)}})
	if err != nil || len(page2.GetData().GetEvents()) != 1 {
		t.Errorf("the hinted next call: %v", err)
	}
}
