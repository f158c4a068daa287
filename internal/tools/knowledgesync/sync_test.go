package knowledgesync_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
	"github.com/toolsvc/toolsvc/internal/tools/knowledgesync"
)

// original are the example items of the single-tenant layout that
// predates owners.
var original = []string{
	"adr-017-mongodb-for-events", "adr-042-database-selection", "pat-013-api-naming", "pat-021-graceful-shutdown",
	"pol-007-structured-logging", "pol-012-no-plaintext-secrets", "spec-101-error-wrapping",
}

// copyExamples copies the original example items into one flat directory
// without their owners: a knowledge directory of the single-tenant layout,
// as it was before tenants (see openSingle).
func copyExamples(tb testing.TB) string {
	tb.Helper()
	dst := tb.TempDir()
	err := filepath.WalkDir("../../../examples/knowledge", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !slices.Contains(original, strings.TrimSuffix(d.Name(), ".md")) {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var kept []string
		for _, l := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(l, "owner:") {
				kept = append(kept, l)
			}
		}
		return os.WriteFile(filepath.Join(dst, filepath.Base(p)), []byte(strings.Join(kept, "\n")), 0o600)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return dst
}

// openSingle opens a single-tenant directory for the deployment's one
// tenant, acme.
func openSingle(tb testing.TB, path string) *knowledge.Dir {
	tb.Helper()
	dir, err := knowledge.OpenDir(path, kb.LibraryOptions{Tenants: []string{"acme"}})
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

func as(tb testing.TB, tenant string, ids map[string]string) context.Context {
	tb.Helper()
	return scope.WithCaller(tb.Context(), scope.Caller{Tenant: tenant, IDs: ids})
}

func run(tb testing.TB, s *knowledgesync.Service, ctx context.Context, req *syncv1.SyncKnowledgeRequest) *syncv1.SyncKnowledgeData {
	tb.Helper()
	resp, err := s.SyncKnowledge(ctx, req)
	if err != nil {
		tb.Fatalf("SyncKnowledge: %v", err)
	}
	return resp.GetData()
}

type want struct{ added, updated, deleted, unchanged, failures uint32 }

func check(tb testing.TB, step string, d *syncv1.SyncKnowledgeData, w want) {
	tb.Helper()
	r := d.GetResult()
	got := want{r.GetAdded(), r.GetUpdated(), r.GetDeleted(), r.GetUnchanged(), r.GetFailures()}
	if got != w {
		tb.Errorf("%s: counts = %+v, want %+v (failed items %v)", step, got, w, d.GetFailedItems())
	}
	if d.GetSuccess() != (w.failures == 0) {
		tb.Errorf("%s: success = %v with %d failures", step, d.GetSuccess(), w.failures)
	}
}

func pointers(tb testing.TB, st store.Store, tenant string) map[string]store.Memory {
	tb.Helper()
	ps, err := st.ListPointers(tb.Context(), tenant)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]store.Memory{}
	for _, p := range ps {
		if _, dup := out[p.KnowledgeItemID]; dup {
			tb.Fatalf("two pointers for %s", p.KnowledgeItemID)
		}
		out[p.KnowledgeItemID] = p
	}
	return out
}

func TestSyncLifecycle(t *testing.T) {
	dirPath := copyExamples(t)
	dir := openSingle(t, dirPath)
	st := teststore.SQLite(t)
	s := knowledgesync.New(dir, st)
	ctx := as(t, "acme", map[string]string{"org_id": "o1", "team_id": "tm1", "project_id": "p1", "user_id": "u1"})

	check(t, "first sync", run(t, s, ctx, &syncv1.SyncKnowledgeRequest{}), want{added: 7})
	ps := pointers(t, st, "acme")
	adr := ps["adr-042-database-selection"]
	if adr.Layer != store.LayerOrg || adr.ScopeID != "o1" || adr.SourceType != store.SourceKnowledgeSync ||
		!strings.Contains(adr.Content, "mysql") || !strings.Contains(adr.Content, "adr-042-database-selection") ||
		!strings.Contains(adr.Content, "Database Selection for New Services") {
		t.Errorf("ADR pointer = %+v", adr)
	}
	if p := ps["pol-007-structured-logging"]; p.Layer != store.LayerCompany || p.ScopeID != "acme" ||
		strings.Contains(p.Content, "Blocking constraints") {
		t.Errorf("policy pointer = %+v: want the company layer, scoped by tenant, without blocking constraints (it has none)", p)
	}
	check(t, "second sync", run(t, s, ctx, &syncv1.SyncKnowledgeRequest{}), want{unchanged: 7})

	// A changed file updates exactly one pointer.
	path := filepath.Join(dirPath, "pol-007-structured-logging.md")
	data, _ := os.ReadFile(path)
	changed := strings.Replace(string(data), "never by printing to stdout", "never by printing", 1)
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	check(t, "after a change", run(t, s, ctx, &syncv1.SyncKnowledgeRequest{}), want{updated: 1, unchanged: 6})
	if p := pointers(t, st, "acme")["pol-007-structured-logging"]; !strings.Contains(p.Content, "never by printing\n") || p.ID != ps["pol-007-structured-logging"].ID {
		t.Errorf("updated pointer = %+v, want the new summary in the same memory", p)
	}

	// A removed file orphans its pointer.
	if err := os.Remove(filepath.Join(dirPath, "pat-021-graceful-shutdown.md")); err != nil {
		t.Fatal(err)
	}
	check(t, "after a removal", run(t, s, ctx, &syncv1.SyncKnowledgeRequest{}), want{deleted: 1, unchanged: 6})
	if !pointers(t, st, "acme")["pat-021-graceful-shutdown"].Orphaned {
		t.Error("pointer of the removed item is not orphaned")
	}

	// A malformed file is a failure with its path; the rest syncs. A file
	// that breaks keeps its pointer.
	if err := os.WriteFile(filepath.Join(dirPath, "broken.md"), []byte("---\nid: broken\ntype: adr\n  - : [\n---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirPath, "spec-101-error-wrapping.md"), []byte("---\nid: spec-101-error-wrapping\nstatus: bogus\n---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := run(t, s, ctx, &syncv1.SyncKnowledgeRequest{})
	check(t, "with malformed files", d, want{unchanged: 5, failures: 2})
	paths := map[string]string{}
	for _, f := range d.GetFailedItems() {
		paths[f.GetPath()] = f.GetReason()
	}
	if paths["broken.md"] == "" || paths["spec-101-error-wrapping.md"] == "" {
		t.Errorf("failed items = %v, want broken.md and spec-101 with reasons", d.GetFailedItems())
	}
	if pointers(t, st, "acme")["spec-101-error-wrapping"].Orphaned {
		t.Error("the pointer of an item whose file is malformed was orphaned")
	}

	// Force rewrites every live pointer without duplicating any.
	before := len(pointers(t, st, "acme"))
	check(t, "forced", run(t, s, ctx, &syncv1.SyncKnowledgeRequest{Force: true}), want{updated: 5, failures: 2})
	if after := len(pointers(t, st, "acme")); after != before {
		t.Errorf("pointers %d -> %d after a forced sync", before, after)
	}

	hist, err := st.ItemHistory(t.Context(), "acme", "pol-007-structured-logging")
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[0].Change != store.ChangeAdded || hist[1].Change != store.ChangeUpdated {
		t.Errorf("history of the changed item = %+v, want added then updated (a forced sync adds no version)", hist)
	}
	hist, _ = st.ItemHistory(t.Context(), "acme", "pat-021-graceful-shutdown")
	if len(hist) != 2 || hist[1].Change != store.ChangeRemoved {
		t.Errorf("history of the removed item = %+v", hist)
	}
}

func TestSyncFiltersAndMissingIdentifiers(t *testing.T) {
	dir := openSingle(t, copyExamples(t))
	st := teststore.SQLite(t)
	s := knowledgesync.New(dir, st)
	noProject := as(t, "acme", map[string]string{"org_id": "o1", "team_id": "tm1"})
	d := run(t, s, noProject, &syncv1.SyncKnowledgeRequest{})
	check(t, "without a project id", d, want{added: 6, failures: 1})
	if f := d.GetFailedItems(); len(f) != 1 || f[0].GetItemId() != "spec-101-error-wrapping" || !strings.Contains(f[0].GetReason(), "x-project-id") {
		t.Errorf("failed items = %v, want spec-101 naming x-project-id", f)
	}
	st2 := teststore.SQLite(t)
	s2 := knowledgesync.New(dir, st2)
	full := as(t, "acme", map[string]string{"org_id": "g1", "team_id": "gt", "project_id": "gp"})
	check(t, "only policies", run(t, s2, full, &syncv1.SyncKnowledgeRequest{Types: []string{"policy"}}), want{added: 2})
	check(t, "only team layer", run(t, s2, full, &syncv1.SyncKnowledgeRequest{Layers: []string{"team"}}), want{added: 2})
	if n := len(pointers(t, st2, "acme")); n != 4 {
		t.Errorf("pointers = %d, want 4", n)
	}
	// The single-tenant layout serves its one tenant only.
	other := as(t, "globex", map[string]string{"org_id": "g1", "team_id": "gt", "project_id": "gp"})
	check(t, "another tenant", run(t, s, other, &syncv1.SyncKnowledgeRequest{}), want{})
	if n := len(pointers(t, st, "globex")); n != 0 {
		t.Errorf("globex pointers = %d, want 0", n)
	}
}

func TestGetSyncStatus(t *testing.T) {
	dir := openSingle(t, copyExamples(t))
	st := teststore.SQLite(t)
	now := time.Now()
	clock := func() time.Time { return now }
	s := knowledgesync.New(dir, st, knowledgesync.WithClock(clock), knowledgesync.WithMaxAge(time.Hour))
	ids := map[string]string{"org_id": "o1", "team_id": "tm1", "project_id": "p1"}
	ctx := as(t, "acme", ids)
	status := func() *syncv1.GetSyncStatusData {
		t.Helper()
		resp, err := s.GetSyncStatus(ctx, &syncv1.GetSyncStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetData()
	}
	if d := status(); d.GetHealthy() || d.GetTimeSinceSync() != "never" || d.GetLastSyncAt() != nil || d.GetStats().GetTotalSyncs() != 0 {
		t.Errorf("before any sync: %v", d)
	}
	run(t, s, ctx, &syncv1.SyncKnowledgeRequest{})
	run(t, s, ctx, &syncv1.SyncKnowledgeRequest{})
	now = time.Now()
	d := status()
	if !d.GetHealthy() || d.GetTimeSinceSync() != "just now" || d.GetLastSyncAt() == nil || d.GetStats().GetTotalSyncs() != 2 || d.GetStats().GetTotalItemsSynced() != 7 {
		t.Errorf("after two syncs: %v", d)
	}
	now = now.Add(3*time.Hour + time.Minute)
	if d := status(); d.GetHealthy() || d.GetTimeSinceSync() != "3 hours ago" {
		t.Errorf("3 hours later with max age 1h: %v", d)
	}
	now = time.Now()
	run(t, s, as(t, "acme", map[string]string{"org_id": "o1"}), &syncv1.SyncKnowledgeRequest{})
	if d := status(); d.GetHealthy() || d.GetFailedItems() != 3 || len(d.GetFailures()) != 3 {
		t.Errorf("after a sync with failures: %v", d)
	}
	other := as(t, "globex", ids)
	resp, err := s.GetSyncStatus(other, &syncv1.GetSyncStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetData().GetTimeSinceSync() != "never" {
		t.Errorf("globex sees acme's syncs: %v", resp.GetData())
	}
}

func TestHumanSince(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{name: "negative", d: -time.Second, want: "just now"},
		{name: "seconds", d: 59 * time.Second, want: "just now"},
		{name: "one minute", d: time.Minute, want: "1 minute ago"},
		{name: "minutes", d: 3*time.Minute + 20*time.Second, want: "3 minutes ago"},
		{name: "one hour", d: time.Hour, want: "1 hour ago"},
		{name: "days", d: 50 * time.Hour, want: "2 days ago"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := knowledgesync.HumanSince(tc.d); got != tc.want {
				t.Errorf("HumanSince(%v) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
}

// TestSyncFollowsVisibility: on the tenants layout, a caller syncs the
// items its tenant and ids see into its own tenant only, never retires
// another team's pointers, and get-sync-status names no failure of an item
// it does not see.
func TestSyncFollowsVisibility(t *testing.T) {
	dirPath := t.TempDir()
	if err := os.CopyFS(dirPath, os.DirFS("../../../examples/knowledge")); err != nil {
		t.Fatal(err)
	}
	dir, err := knowledge.OpenDir(dirPath, kb.LibraryOptions{Tenants: []string{"acme", "globex"}, CompanyWide: true})
	if err != nil {
		t.Fatal(err)
	}
	st := teststore.SQLite(t)
	s := knowledgesync.New(dir, st)
	platform := as(t, "acme", map[string]string{"org_id": "acme-org", "team_id": "acme-platform", "project_id": "acme-shop"})
	payments := as(t, "acme", map[string]string{"org_id": "acme-org", "team_id": "acme-payments"})
	globex := as(t, "globex", map[string]string{"org_id": "globex-org"})

	check(t, "platform", run(t, s, platform, &syncv1.SyncKnowledgeRequest{}), want{added: 7})
	if got := keys(pointers(t, st, "acme")); !slices.Equal(got, original) {
		t.Fatalf("acme pointers after the platform team's sync = %v, want %v", got, original)
	}
	if p := pointers(t, st, "acme")["pat-013-api-naming"]; p.Layer != store.LayerTeam || p.ScopeID != "acme-platform" {
		t.Errorf("team pointer = %s/%s, want team/acme-platform", p.Layer, p.ScopeID)
	}
	// The payments team adds its own pattern, and neither retires nor
	// rewrites the platform team's pointers.
	check(t, "payments", run(t, s, payments, &syncv1.SyncKnowledgeRequest{}), want{added: 1, unchanged: 4})
	ps := pointers(t, st, "acme")
	if p := ps["pat-030-payments-egress-client"]; p.ScopeID != "acme-payments" {
		t.Errorf("payments pointer scope = %q", p.ScopeID)
	}
	if ps["pat-013-api-naming"].Orphaned || ps["spec-101-error-wrapping"].Orphaned {
		t.Error("another team's sync orphaned the platform team's pointers")
	}
	check(t, "globex", run(t, s, globex, &syncv1.SyncKnowledgeRequest{}), want{added: 2})
	if got := keys(pointers(t, st, "globex")); !slices.Equal(got, []string{"adr-107-event-broker", "pol-012-no-plaintext-secrets"}) {
		t.Errorf("globex pointers = %v", got)
	}
	if n := len(pointers(t, st, "acme")); n != 8 {
		t.Errorf("acme pointers = %d after globex's sync, want 8", n)
	}

	// A malformed file of acme is acme's failure only; a failure of the
	// payments team's item is not shown to the platform team.
	writeFile(t, filepath.Join(dirPath, "tenants", "acme", "broken.md"), "---\nid: broken\nlayer: team\n---\n")
	writeFile(t, filepath.Join(dirPath, "tenants", "globex", "broken.md"), "---\nid: [\n---\n")
	d := run(t, s, payments, &syncv1.SyncKnowledgeRequest{})
	for _, f := range d.GetFailedItems() {
		if strings.Contains(f.GetPath(), "globex") {
			t.Errorf("acme's sync reports globex's file: %v", f)
		}
	}
	if len(d.GetFailedItems()) != 1 {
		t.Errorf("failed items = %v, want acme's broken.md", d.GetFailedItems())
	}
	resp, err := s.GetSyncStatus(globex, &syncv1.GetSyncStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if f := resp.GetData().GetFailures(); len(f) != 0 {
		t.Errorf("globex's status shows failures %v of a sync it did not run", f)
	}
}

func keys(m map[string]store.Memory) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func writeFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}
