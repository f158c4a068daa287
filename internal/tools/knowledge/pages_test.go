package knowledge_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

// TestQueryPagesUnderSync: while a caller pages through query-knowledge,
// syncs remove items of the result set and add new ones. Every item of
// the first page's set that stays is shown exactly once, a removed one at
// most once, and none added meanwhile slips in; on both stores.
func TestQueryPagesUnderSync(t *testing.T) {
	backends := map[string]func(testing.TB) store.Store{"sqlite": teststore.SQLite}
	if teststore.HavePostgres() {
		backends["postgres"] = teststore.Postgres
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var first []string
			for i := range 30 {
				id := fmt.Sprintf("pol-%03d", i)
				writeItem(t, dir, id+".md", id)
				first = append(first, id)
			}
			d, err := knowledge.OpenDir(dir, kb.LibraryOptions{Tenants: []string{"t1"}})
			if err != nil {
				t.Fatal(err)
			}
			s := knowledge.New(d, open(t))
			ctx := scope.WithCaller(t.Context(), scope.Caller{Tenant: "t1", IDs: map[string]string{"subject": "u1"}})
			seen, removed, added := map[string]int{}, map[string]bool{}, map[string]bool{}
			req := &knowledgev1.QueryKnowledgeRequest{Limit: ptr(uint32(7))}
			for page := 0; ; page++ {
				resp, err := s.QueryKnowledge(ctx, req)
				if err != nil {
					t.Fatalf("page %d: %v", page, err)
				}
				if page == 0 && resp.GetData().GetTotalCount() != 30 {
					t.Errorf("total = %d, want 30", resp.GetData().GetTotalCount())
				}
				for _, it := range resp.GetData().GetItems() {
					seen[it.GetId()]++
				}
				next := resp.GetData().GetNextCursor()
				if next == "" {
					break
				}
				// A sync between pages: two items of the set go, two new come.
				for k := range 2 {
					victim := first[(page*5+k*11)%len(first)]
					if err := os.Remove(filepath.Join(dir, victim+".md")); err == nil {
						removed[victim] = true
					}
					id := fmt.Sprintf("pol-new-%d-%d", page, k)
					writeItem(t, dir, id+".md", id)
					added[id] = true
				}
				if _, _, err := d.Reload(t.Context()); err != nil {
					t.Fatal(err)
				}
				req = &knowledgev1.QueryKnowledgeRequest{Limit: ptr(uint32(7)), Cursor: next}
			}
			if len(removed) < 4 {
				t.Fatalf("only %d items removed: the test ran without syncs", len(removed))
			}
			for _, id := range first {
				if n := seen[id]; n > 1 || (!removed[id] && n != 1) {
					t.Errorf("%s (removed %v) shown %d times", id, removed[id], n)
				}
			}
			for id := range added {
				if seen[id] > 0 {
					t.Errorf("%s, added after the first page, was shown", id)
				}
			}
		})
	}
}

func TestQueryCursorIsBoundToTheRequest(t *testing.T) {
	s, _, ctx := newService(t)
	resp, err := s.QueryKnowledge(ctx, &knowledgev1.QueryKnowledgeRequest{Limit: ptr(uint32(2))})
	if err != nil || resp.GetData().GetNextCursor() == "" {
		t.Fatalf("first page: %v, next %q", err, resp.GetData().GetNextCursor())
	}
	next := resp.GetData().GetNextCursor()
	found := false
	for _, a := range resp.GetAgentHints().GetSuggestedNextActions() {
		found = found || (a.GetAction() == "query-knowledge" && a.GetData().GetFields()["cursor"].GetStringValue() == next)
	}
	if !found {
		t.Error("no hint carries the next cursor")
	}
	_, err = s.QueryKnowledge(ctx, &knowledgev1.QueryKnowledgeRequest{Layer: "company", Cursor: next})
	te, ok := toolerr.As(err)
	if !ok || te.Code != toolerr.InvalidInput || te.Violations[0].GetField() != "cursor" || te.Violations[0].GetRule() != "cursor.query" {
		t.Errorf("another filter with the cursor: %v, want INVALID_INPUT cursor.query", err)
	}
	page2, err := s.QueryKnowledge(ctx, &knowledgev1.QueryKnowledgeRequest{Limit: ptr(uint32(10)), Cursor: next})
	if err != nil || len(page2.GetData().GetItems()) != 3 || page2.GetData().GetNextCursor() != "" {
		t.Errorf("page 2: %v, %d items, next %q; want the other 3 and no cursor", err, len(page2.GetData().GetItems()), page2.GetData().GetNextCursor())
	}
}
