package knowledge_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

const examples = "../../../examples/knowledge"

func newService(tb testing.TB) (*knowledge.Service, store.Store, context.Context) {
	tb.Helper()
	dir, err := knowledge.OpenDir(examples, kb.LibraryOptions{Tenants: []string{"acme", "globex"}, CompanyWide: true})
	if err != nil {
		tb.Fatal(err)
	}
	st := teststore.SQLite(tb)
	ctx := scope.WithCaller(tb.Context(), scope.Caller{Tenant: "acme", IDs: platformShop})
	return knowledge.New(dir, st), st, ctx
}

func ptr[T any](v T) *T { return &v }

// platformShop are the ids of acme's platform team on the shop project,
// which sees the seven original example items.
var platformShop = map[string]string{"user_id": "u1", "org_id": "acme-org", "team_id": "acme-platform", "project_id": "acme-shop"}

func TestQueryKnowledge(t *testing.T) {
	s, _, ctx := newService(t)
	tests := []struct {
		name    string
		req     *knowledgev1.QueryKnowledgeRequest
		wantIDs []string
	}{
		{name: "status defaults to accepted", req: &knowledgev1.QueryKnowledgeRequest{},
			wantIDs: []string{"pol-007-structured-logging", "pol-012-no-plaintext-secrets", "adr-042-database-selection", "pat-013-api-naming", "spec-101-error-wrapping"}},
		{name: "explicit superseded status", req: &knowledgev1.QueryKnowledgeRequest{Status: []string{"superseded"}},
			wantIDs: []string{"adr-017-mongodb-for-events"}},
		{name: "query text ranks", req: &knowledgev1.QueryKnowledgeRequest{Query: "database selection", Type: "adr"},
			wantIDs: []string{"adr-042-database-selection"}},
		{name: "layer filter", req: &knowledgev1.QueryKnowledgeRequest{Layer: "company"},
			wantIDs: []string{"pol-007-structured-logging", "pol-012-no-plaintext-secrets"}},
		{name: "tag filter", req: &knowledgev1.QueryKnowledgeRequest{Tags: []string{"logging"}},
			wantIDs: []string{"pol-007-structured-logging"}},
		{name: "limit", req: &knowledgev1.QueryKnowledgeRequest{Limit: ptr(uint32(2))},
			wantIDs: []string{"pol-007-structured-logging", "pol-012-no-plaintext-secrets"}},
		{name: "no match", req: &knowledgev1.QueryKnowledgeRequest{Query: "kubernetes helm charts"}, wantIDs: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := s.QueryKnowledge(ctx, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, it := range resp.GetData().GetItems() {
				ids = append(ids, it.GetId())
			}
			if !slices.Equal(ids, tc.wantIDs) {
				t.Errorf("ids = %v, want %v", ids, tc.wantIDs)
			}
			if h := resp.GetAgentHints(); len(ids) == 0 && h.GetSuggestedNextActions()[0].GetAction() != "query-knowledge" {
				t.Errorf("empty result does not suggest broadening: %v", h.GetSuggestedNextActions())
			}
		})
	}
}

func TestShowKnowledge(t *testing.T) {
	s, st, ctx := newService(t)
	resp, err := s.ShowKnowledge(ctx, &knowledgev1.ShowKnowledgeRequest{Id: "adr-042-database-selection"})
	if err != nil {
		t.Fatal(err)
	}
	it := resp.GetData().GetItem()
	if len(it.GetConstraints()) != 2 || it.GetSupersedes() != "adr-017-mongodb-for-events" || it.GetContent() == "" {
		t.Errorf("item = %v, want its two constraints (included by default), supersedes and content", it)
	}
	resp, err = s.ShowKnowledge(ctx, &knowledgev1.ShowKnowledgeRequest{Id: "adr-042-database-selection", IncludeConstraints: ptr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetData().GetItem().GetConstraints()); n != 0 {
		t.Errorf("includeConstraints=false gave %d constraints", n)
	}

	old, err := s.ShowKnowledge(ctx, &knowledgev1.ShowKnowledgeRequest{Id: "adr-017-mongodb-for-events"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(old.GetData().GetItem().GetSupersededBy(), []string{"adr-042-database-selection"}) {
		t.Errorf("supersededBy = %v", old.GetData().GetItem().GetSupersededBy())
	}
	if a := old.GetAgentHints().GetSuggestedNextActions(); len(a) == 0 || a[0].GetData().GetFields()["id"].GetStringValue() != "adr-042-database-selection" {
		t.Errorf("superseded item does not point at its successor: %v", a)
	}

	_, err = s.ShowKnowledge(ctx, &knowledgev1.ShowKnowledgeRequest{Id: "adr-999"})
	te, ok := toolerr.As(err)
	if !ok || te.Code != toolerr.NotFound || te.Details["requestedId"] != "adr-999" {
		t.Fatalf("unknown id: err = %v, want NOT_FOUND with requestedId", err)
	}

	// History is per tenant.
	for _, tenant := range []string{"acme", "t2"} {
		v := &store.ItemVersion{Tenant: tenant, ItemID: "adr-042-database-selection", Hash: "h-" + tenant, Change: store.ChangeAdded, Author: "a-" + tenant}
		if err := st.AppendItemVersion(t.Context(), v); err != nil {
			t.Fatal(err)
		}
	}
	resp, err = s.ShowKnowledge(ctx, &knowledgev1.ShowKnowledgeRequest{Id: "adr-042-database-selection", IncludeHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	h := resp.GetData().GetHistory()
	if len(h) != 1 || h[0].GetAuthor() != "a-acme" || h[0].GetVersion() != "1" {
		t.Errorf("history = %v, want only tenant t1's version 1", h)
	}
}

func TestCheckKnowledge(t *testing.T) {
	s, _, ctx := newService(t)
	tests := []struct {
		name       string
		req        *knowledgev1.CheckKnowledgeRequest
		wantPassed bool
		wantItems  []string // knowledge items of the violations
	}{
		{name: "mysql2 is blocked by ADR-042",
			req:        &knowledgev1.CheckKnowledgeRequest{Dependencies: []*knowledgev1.CheckDependency{{Name: "mysql2", Version: "3.0.0"}}},
			wantPassed: false, wantItems: []string{"adr-042-database-selection"}},
		{name: "allowed dependencies pass",
			req:        &knowledgev1.CheckKnowledgeRequest{Dependencies: []*knowledgev1.CheckDependency{{Name: "github.com/jackc/pgx/v5"}, {Name: "log/slog"}}},
			wantPassed: true},
		{name: "println is a warning with a location",
			req:        &knowledgev1.CheckKnowledgeRequest{Files: []*knowledgev1.CheckFile{{Path: "main.go", Content: "package main\n\nfunc main() {\n\tfmt.Println(1)\n}\n"}}},
			wantPassed: true, wantItems: []string{"pol-007-structured-logging"}},
		{name: "minSeverity block hides warnings",
			req:        &knowledgev1.CheckKnowledgeRequest{MinSeverity: "block", Files: []*knowledgev1.CheckFile{{Path: "main.go", Content: "fmt.Println(1)\n"}}},
			wantPassed: true},
		{name: "named items only",
			req: &knowledgev1.CheckKnowledgeRequest{KnowledgeItemIds: []string{"pol-007-structured-logging"},
				Dependencies: []*knowledgev1.CheckDependency{{Name: "mysql2"}}},
			wantPassed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := s.CheckKnowledge(ctx, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			d := resp.GetData()
			var items []string
			for _, v := range d.GetViolations() {
				items = append(items, v.GetKnowledgeItemId())
			}
			if d.GetPassed() != tc.wantPassed || !slices.Equal(items, tc.wantItems) {
				t.Errorf("passed = %v, violations of %v; want %v, %v", d.GetPassed(), items, tc.wantPassed, tc.wantItems)
			}
			if d.GetConstraintsEvaluated() == 0 {
				t.Error("no constraint evaluated")
			}
		})
	}

	resp, err := s.CheckKnowledge(ctx, tests[2].req)
	if err != nil {
		t.Fatal(err)
	}
	if loc := resp.GetData().GetViolations()[0].GetLocation(); loc.GetFile() != "main.go" || loc.GetLine() != 4 {
		t.Errorf("location = %v, want main.go line 4", loc)
	}

	resp, err = s.CheckKnowledge(ctx, tests[0].req)
	if err != nil {
		t.Fatal(err)
	}
	v := resp.GetData().GetViolations()[0]
	if v.GetSeverity() != "block" || v.GetConstraint().GetOperator() != "must_not_use" || v.GetKnowledgeItemTitle() != "Database Selection for New Services" {
		t.Errorf("violation = %v", v)
	}
	acts := resp.GetAgentHints().GetSuggestedNextActions()
	if len(acts) < 2 || acts[0].GetPriority() != "critical" || acts[0].GetCategory() != "correction" ||
		acts[1].GetAction() != "show-knowledge" || acts[1].GetData().GetFields()["id"].GetStringValue() != "adr-042-database-selection" {
		t.Errorf("next actions = %v, want a critical fix then show-knowledge of the ADR", acts)
	}

	resp, err = s.CheckKnowledge(ctx, &knowledgev1.CheckKnowledgeRequest{KnowledgeItemIds: []string{"adr-999"}, Dependencies: []*knowledgev1.CheckDependency{{Name: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(resp.GetData().GetUnknownItemIds(), []string{"adr-999"}) || len(resp.GetAgentHints().GetWarnings()) == 0 {
		t.Errorf("unknown ids = %v, warnings %v", resp.GetData().GetUnknownItemIds(), resp.GetAgentHints().GetWarnings())
	}
}

func TestDirReloadConcurrent(t *testing.T) {
	dir := t.TempDir()
	write := func(name, id string) {
		t.Helper()
		body := "---\nid: " + id + "\ntype: policy\nlayer: company\ntitle: T " + id + "\nstatus: accepted\n---\nbody\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.md", "pol-a")
	d, err := knowledge.OpenDir(dir, kb.LibraryOptions{Tenants: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.md"), []byte("---\nid: [\n---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write("b.md", "pol-b")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if d.Library().For("t1") == nil {
					t.Error("nil set during reload")
				}
			}
		})
		wg.Go(func() {
			if _, _, err := d.Reload(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if d.Library().For("t1").Len() != 2 {
		t.Errorf("items = %d, want 2", d.Library().For("t1").Len())
	}
	if errs := d.LoadErrors(); len(errs) != 1 || errs[0].Path != "bad.md" {
		t.Errorf("load errors = %v, want bad.md", errs)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Reload(t.Context()); err == nil {
		t.Error("Reload of a removed directory succeeded")
	}
	if d.Library().For("t1").Len() != 2 {
		t.Error("a failed reload replaced the set")
	}
	if _, err := knowledge.OpenDir(filepath.Join(dir, "missing"), kb.LibraryOptions{Tenants: []string{"t1"}}); err == nil {
		t.Error("OpenDir of a missing directory succeeded")
	}
}

// TestCheckKnowledgeNothingToCheck: check-knowledge's fields are
// all optional. With nothing to check ({}, or item ids only) the check
// passes with no constraint evaluated, and the hints say so and give a
// next step that is not a retry: the files or dependencies to give, and
// show-knowledge for each named item's constraints.
func TestCheckKnowledgeNothingToCheck(t *testing.T) {
	s, _, ctx := newService(t)
	for _, tc := range []struct {
		name     string
		req      *knowledgev1.CheckKnowledgeRequest
		wantShow []string
	}{
		{"empty", &knowledgev1.CheckKnowledgeRequest{}, nil},
		{"ids only", &knowledgev1.CheckKnowledgeRequest{KnowledgeItemIds: []string{"adr-042-database-selection", "adr-999"}},
			[]string{"adr-042-database-selection"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := s.CheckKnowledge(ctx, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			d := resp.GetData()
			if !d.GetPassed() || len(d.GetViolations()) != 0 || d.GetConstraintsEvaluated() != 0 {
				t.Errorf("data = %v, want a passing check with nothing evaluated", d)
			}
			var show []string
			again := false
			for _, a := range resp.GetAgentHints().GetSuggestedNextActions() {
				switch a.GetAction() {
				case "show-knowledge":
					show = append(show, a.GetData().GetFields()["id"].GetStringValue())
				case "check-knowledge":
					again = a.GetData().GetFields()["dependencies"] != nil
				}
			}
			if !slices.Equal(show, tc.wantShow) || !again {
				t.Errorf("next actions show %v (want %v), check again with dependencies %v", show, tc.wantShow, again)
			}
		})
	}
}
