package tools

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
	"github.com/toolsvc/toolsvc/internal/tests/support/tooltest"
)

func syncNow(t testing.TB, c syncv1.SyncServiceClient, ctx context.Context, force bool) *syncv1.SyncKnowledgeData {
	t.Helper()
	resp, err := c.SyncKnowledge(ctx, &syncv1.SyncKnowledgeRequest{Force: force})
	if err != nil {
		t.Fatalf("sync-knowledge: %v", err)
	}
	return resp.GetData()
}

func counts(d *syncv1.SyncKnowledgeData) [5]uint32 {
	r := d.GetResult()
	return [5]uint32{r.GetAdded(), r.GetUpdated(), r.GetDeleted(), r.GetUnchanged(), r.GetFailures()}
}

// pointerIDs returns the knowledge item ids of the pointer memories the
// caller can find, failing on duplicates.
func pointerIDs(t testing.TB, c memoryv1.MemoryServiceClient, ctx context.Context) []string {
	t.Helper()
	resp, err := c.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "knowledge item", Threshold: ptr(0.0), Limit: ptr(uint32(100))})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range resp.GetData().GetResults() {
		if r.GetSourceType() != "knowledge_sync" {
			continue
		}
		if slices.Contains(ids, r.GetKnowledgeItemId()) {
			t.Fatalf("two pointers for %s", r.GetKnowledgeItemId())
		}
		ids = append(ids, r.GetKnowledgeItemId())
	}
	slices.Sort(ids)
	return ids
}

func TestKnowledgeAndSync(t *testing.T) {
	tooltest.Backends(t, func(t *testing.T, backend string) {
		dir := tooltest.CopyDir(t, testserver.KnowledgeDir(t))
		srv := tooltest.Start(t, backend, dir)
		kc := knowledgev1.NewKnowledgeServiceClient(srv.Conn)
		sc := syncv1.NewSyncServiceClient(srv.Conn)
		mc := memoryv1.NewMemoryServiceClient(srv.Conn)
		alice := tooltest.As(t.Context(), tooltest.Alice, "x-project-id", "acme-shop")
		gina := tooltest.As(t.Context(), tooltest.Gina)

		t.Run("query defaults and limits", func(t *testing.T) {
			resp, err := kc.QueryKnowledge(alice, &knowledgev1.QueryKnowledgeRequest{})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range resp.GetData().GetItems() {
				if it.GetStatus() != "accepted" {
					t.Errorf("item %s with status %s in a default query", it.GetId(), it.GetStatus())
				}
			}
			if resp.GetData().GetTotalCount() != 5 {
				t.Errorf("totalCount = %d, want the 5 accepted items", resp.GetData().GetTotalCount())
			}
			for _, limit := range []uint32{0, 101} {
				_, err := kc.QueryKnowledge(alice, &knowledgev1.QueryKnowledgeRequest{Limit: &limit})
				tooltest.WantCode(t, err, toolerr.InvalidInput)
			}
			_, err = kc.QueryKnowledge(alice, &knowledgev1.QueryKnowledgeRequest{Status: []string{"approved"}})
			tooltest.WantCode(t, err, toolerr.InvalidInput)
			resp, err = kc.QueryKnowledge(alice, &knowledgev1.QueryKnowledgeRequest{Query: "database selection", Type: "adr", Status: []string{"accepted", "superseded"}, Limit: ptr(uint32(1))})
			if err != nil {
				t.Fatal(err)
			}
			if it := resp.GetData().GetItems(); len(it) != 1 || it[0].GetId() != "adr-042-database-selection" || !it[0].GetHasConstraints() || resp.GetData().GetTotalCount() != 2 {
				t.Errorf("items = %v (total %d)", it, resp.GetData().GetTotalCount())
			}
		})

		t.Run("sync, check, show", func(t *testing.T) {
			if got := counts(syncNow(t, sc, alice, false)); got != [5]uint32{7, 0, 0, 0, 0} {
				t.Fatalf("first sync = %v, want 7 added", got)
			}
			resp, err := kc.CheckKnowledge(alice, &knowledgev1.CheckKnowledgeRequest{Dependencies: []*knowledgev1.CheckDependency{{Name: "mysql2", Version: "3.0.0"}}})
			if err != nil {
				t.Fatal(err)
			}
			d := resp.GetData()
			if d.GetPassed() || len(d.GetViolations()) != 1 || d.GetViolations()[0].GetKnowledgeItemId() != "adr-042-database-selection" ||
				d.GetViolations()[0].GetSeverity() != "block" || d.GetSummary().GetBlock() != 1 {
				t.Errorf("mysql2 check = %v", d)
			}
			if a := resp.GetAgentHints().GetSuggestedNextActions(); a[0].GetPriority() != "critical" || a[1].GetAction() != "show-knowledge" {
				t.Errorf("next actions = %v", a)
			}
			resp, err = kc.CheckKnowledge(alice, &knowledgev1.CheckKnowledgeRequest{Dependencies: []*knowledgev1.CheckDependency{{Name: "pg"}, {Name: "pino"}}})
			if err != nil {
				t.Fatal(err)
			}
			if !resp.GetData().GetPassed() || len(resp.GetData().GetViolations()) != 0 {
				t.Errorf("allowed dependencies: %v", resp.GetData())
			}
			// Nothing to check (check-knowledge 1.1.0): an empty check that
			// passes, and hints that say what to send.
			empty, err := kc.CheckKnowledge(alice, &knowledgev1.CheckKnowledgeRequest{})
			if err != nil {
				t.Fatalf("an empty check: %v", err)
			}
			if !empty.GetData().GetPassed() || empty.GetData().GetConstraintsEvaluated() != 0 || len(empty.GetAgentHints().GetSuggestedNextActions()) == 0 {
				t.Errorf("an empty check = %v, hints %v", empty.GetData(), empty.GetAgentHints().GetSuggestedNextActions())
			}

			show, err := kc.ShowKnowledge(alice, &knowledgev1.ShowKnowledgeRequest{Id: "adr-042-database-selection", IncludeHistory: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(show.GetData().GetItem().GetConstraints()) != 2 || len(show.GetData().GetHistory()) != 1 {
				t.Errorf("show = constraints %d, history %v", len(show.GetData().GetItem().GetConstraints()), show.GetData().GetHistory())
			}
			// Another tenant's item is as absent as one that does not exist.
			_, err = kc.ShowKnowledge(gina, &knowledgev1.ShowKnowledgeRequest{Id: "adr-042-database-selection", IncludeHistory: true})
			if te := tooltest.WantCode(t, err, toolerr.NotFound); te.GetDetails().GetFields()["requestedId"].GetStringValue() != "adr-042-database-selection" {
				t.Errorf("globex: details = %v", te.GetDetails())
			}
			_, err = kc.ShowKnowledge(alice, &knowledgev1.ShowKnowledgeRequest{Id: "adr-999"})
			te := tooltest.WantCode(t, err, toolerr.NotFound)
			if te.GetDetails().GetFields()["requestedId"].GetStringValue() != "adr-999" {
				t.Errorf("details = %v", te.GetDetails())
			}
		})

		t.Run("changes, removals, malformed files, force", func(t *testing.T) {
			before := pointerIDs(t, mc, alice)
			if len(before) != 7 {
				t.Fatalf("pointers = %v, want 7", before)
			}
			path := filepath.Join(dir, "company-wide", "pol-012-no-plaintext-secrets.md")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(strings.Replace(string(data), "status: accepted", "status: deprecated", 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := counts(syncNow(t, sc, alice, false)); got != [5]uint32{0, 1, 0, 6, 0} {
				t.Errorf("after one change = %v, want exactly one updated", got)
			}
			if err := os.Remove(filepath.Join(dir, "tenants", "acme", "patterns", "pat-021-graceful-shutdown.md")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tenants", "acme", "adrs", "adr-100-broken.md"), []byte("---\nid: adr-100\ntype: adr\nconstraints:\n  - operator: must_be\n---\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			d := syncNow(t, sc, alice, false)
			if got := counts(d); got != [5]uint32{0, 0, 1, 6, 1} || d.GetSuccess() {
				t.Errorf("after a removal and a malformed file = %v (success %v)", got, d.GetSuccess())
			}
			if f := d.GetFailedItems(); len(f) != 1 || f[0].GetPath() != "tenants/acme/adrs/adr-100-broken.md" || f[0].GetReason() == "" {
				t.Errorf("failed items = %v", f)
			}
			after := pointerIDs(t, mc, alice)
			if slices.Contains(after, "pat-021-graceful-shutdown") || len(after) != 6 {
				t.Errorf("pointers after removal = %v", after)
			}
			d = syncNow(t, sc, alice, true)
			if got := counts(d); got != [5]uint32{0, 6, 0, 0, 1} {
				t.Errorf("forced = %v, want 6 updated", got)
			}
			if forced := pointerIDs(t, mc, alice); !slices.Equal(forced, after) {
				t.Errorf("pointers after force = %v, want %v", forced, after)
			}

			st, err := sc.GetSyncStatus(alice, &syncv1.GetSyncStatusRequest{})
			if err != nil {
				t.Fatal(err)
			}
			sd := st.GetData()
			if sd.GetHealthy() || sd.GetFailedItems() != 1 || sd.GetStats().GetTotalSyncs() != 4 || sd.GetTimeSinceSync() != "just now" || sd.GetLastSyncAt() == nil {
				t.Errorf("status = %v", sd)
			}
		})

		t.Run("tenants are separate", func(t *testing.T) {
			st, err := sc.GetSyncStatus(gina, &syncv1.GetSyncStatusRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if d := st.GetData(); d.GetTimeSinceSync() != "never" || d.GetLastSyncAt() != nil || d.GetHealthy() {
				t.Errorf("globex status = %v", d)
			}
			if ids := pointerIDs(t, mc, gina); len(ids) != 0 {
				t.Errorf("globex finds acme's pointers %v", ids)
			}
			// globex syncs its own knowledge (ADR-107) and the company-wide
			// policy; acme's malformed file is not globex's failure.
			if got := counts(syncNow(t, sc, gina, false)); got != [5]uint32{2, 0, 0, 0, 0} {
				t.Errorf("globex's first sync = %v, want its 2 pointers added and no failure", got)
			}
			if ids := pointerIDs(t, mc, gina); !slices.Equal(ids, []string{"adr-107-event-broker", "pol-012-no-plaintext-secrets"}) {
				t.Errorf("globex's pointers = %v", ids)
			}
		})

		t.Run("audit trail", func(t *testing.T) {
			ac := auditv1.NewAuditServiceClient(srv.Conn)
			var events []*auditv1.AuditEvent
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				resp, err := ac.ListAuditEvents(alice, &auditv1.ListAuditEventsRequest{Tool: "sync-knowledge"})
				if err != nil {
					t.Fatal(err)
				}
				if events = resp.GetData().GetEvents(); len(events) >= 4 {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if len(events) != 4 {
				t.Fatalf("acme's sync-knowledge events = %d, want 4", len(events))
			}
			for _, e := range events {
				if e.GetTenant() != "acme" || e.GetSubject() != "alice" || e.GetDecision() != "allow" {
					t.Errorf("event = %v", e)
				}
			}
			resp, err := ac.ListAuditEvents(gina, &auditv1.ListAuditEventsRequest{Page: &toolsvcv1.PageRequest{Limit: 100}})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range resp.GetData().GetEvents() {
				if e.GetTenant() != "globex" {
					t.Errorf("globex lists an event of %s", e.GetTenant())
				}
			}
			_, err = ac.ListAuditEvents(alice, &auditv1.ListAuditEventsRequest{Page: &toolsvcv1.PageRequest{Cursor: "garbage"}})
			te := tooltest.WantCode(t, err, toolerr.InvalidInput)
			if v := te.GetFieldViolations(); len(v) != 1 || v[0].GetField() != "page.cursor" {
				t.Errorf("violations = %v, want page.cursor", v)
			}
			_, err = ac.ListAuditEvents(alice, &auditv1.ListAuditEventsRequest{Page: &toolsvcv1.PageRequest{Limit: 101}})
			tooltest.WantCode(t, err, toolerr.InvalidInput)
		})
	})
}
