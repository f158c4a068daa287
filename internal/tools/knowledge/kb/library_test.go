package kb

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeFiles writes path → content under dir.
func writeFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
}

func loadLibrary(tb testing.TB, dir string, opts LibraryOptions) (*Library, []LoadError) {
	tb.Helper()
	lib, errs, err := LoadLibrary(dir, opts)
	if err != nil {
		tb.Fatalf("LoadLibrary: %v", err)
	}
	return lib, errs
}

func ids(items []*Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

func TestLibraryExamples(t *testing.T) {
	lib, errs := loadLibrary(t, examplesDir, LibraryOptions{Tenants: []string{"acme", "globex"}, CompanyWide: true})
	if len(errs) > 0 {
		t.Fatalf("load errors in the examples: %v", errs)
	}
	if lib.Layout() != LayoutTenants || !slices.Equal(lib.Tenants(), []string{"acme", "globex"}) {
		t.Fatalf("layout %s, tenants %v", lib.Layout(), lib.Tenants())
	}
	acme, globex := lib.For("acme"), lib.For("globex")
	if _, ok := acme.Get("adr-107-event-broker"); ok {
		t.Error("acme's set holds globex's ADR-107")
	}
	if _, ok := globex.Get("adr-042-database-selection"); ok {
		t.Error("globex's set holds acme's ADR-042")
	}
	for _, s := range []*Set{acme, globex, lib.For("initech")} {
		if _, ok := s.Get("pol-012-no-plaintext-secrets"); !ok {
			t.Error("the company-wide policy is not published to a tenant")
		}
	}
	matches, _ := globex.Query(Query{Text: "event broker kafka", Viewer: &Viewer{OrgID: "globex-org"}})
	if len(matches) != 1 || matches[0].Item.ID != "adr-107-event-broker" || matches[0].Item.Tenant != "globex" {
		t.Errorf("globex query broker = %v", matches)
	}
}

func TestLibraryCompanyWideNeedsConfiguration(t *testing.T) {
	lib, errs := loadLibrary(t, examplesDir, LibraryOptions{Tenants: []string{"acme", "globex"}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, ok := lib.For("acme").Get("pol-012-no-plaintext-secrets"); ok {
		t.Error("company-wide item published without CompanyWide")
	}
	if !slices.ContainsFunc(lib.Notes(), func(n string) bool { return strings.Contains(n, "NOT published") }) {
		t.Errorf("notes %v do not say company-wide items are held back", lib.Notes())
	}
}

// TestLibraryDevelopmentNotesAgree: in development mode the company-wide
// items are served to the one principal, so no note says they are not
// published (two start-up lines contradicted each other).
func TestLibraryDevelopmentNotesAgree(t *testing.T) {
	lib, errs := loadLibrary(t, examplesDir, LibraryOptions{Development: true})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	notes := strings.Join(lib.Notes(), "\n")
	if strings.Contains(notes, "NOT published") || strings.Contains(notes, "are not published") {
		t.Errorf("development notes say company-wide items are not published:\n%s", notes)
	}
	if !strings.Contains(notes, "served to the development principal only") {
		t.Errorf("development notes do not say who is served the company-wide items:\n%s", notes)
	}
}

func TestViewerSees(t *testing.T) {
	lib, _ := loadLibrary(t, examplesDir, LibraryOptions{CompanyWide: true})
	acme := lib.For("acme")
	tests := []struct {
		name   string
		viewer *Viewer
		want   []string
	}{
		{name: "platform team of the shop project", viewer: &Viewer{OrgID: "acme-org", TeamID: "acme-platform", ProjectID: "acme-shop"},
			want: []string{"adr-017-mongodb-for-events", "adr-042-database-selection", "pat-013-api-naming", "pat-021-graceful-shutdown",
				"pol-007-structured-logging", "pol-012-no-plaintext-secrets", "spec-101-error-wrapping"}},
		{name: "payments team", viewer: &Viewer{OrgID: "acme-org", TeamID: "acme-payments"},
			want: []string{"adr-017-mongodb-for-events", "adr-042-database-selection", "pat-030-payments-egress-client",
				"pol-007-structured-logging", "pol-012-no-plaintext-secrets"}},
		{name: "no team id", viewer: &Viewer{OrgID: "acme-org"},
			want: []string{"adr-017-mongodb-for-events", "adr-042-database-selection", "pol-007-structured-logging", "pol-012-no-plaintext-secrets"}},
		{name: "no ids: company items only", viewer: &Viewer{},
			want: []string{"pol-007-structured-logging", "pol-012-no-plaintext-secrets"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(acme.Visible(tc.viewer)); !slices.Equal(got, tc.want) {
				t.Errorf("visible = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCheckFollowsTeams: one team's constraint does not apply to another
// team's check, and each violation names its layer and owner.
func TestCheckFollowsTeams(t *testing.T) {
	lib, _ := loadLibrary(t, examplesDir, LibraryOptions{})
	acme := lib.For("acme")
	in := func(v *Viewer) CheckInput {
		return CheckInput{Dependencies: []Dependency{{Name: "axios"}}, Viewer: v}
	}
	res, err := acme.Check(context.Background(), in(&Viewer{OrgID: "acme-org", TeamID: "acme-payments"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || len(res.Violations) != 1 || res.Violations[0].ItemID != "pat-030-payments-egress-client" ||
		res.Violations[0].Layer != LayerTeam || res.Violations[0].Owner != "acme-payments" {
		t.Fatalf("payments: %+v", res)
	}
	res, err = acme.Check(context.Background(), in(&Viewer{OrgID: "acme-org", TeamID: "acme-platform"}))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed || len(res.Violations) != 0 {
		t.Fatalf("platform team is checked against the payments team's pattern: %+v", res.Violations)
	}
	// Naming an item the caller does not see is naming an unknown item.
	named := in(&Viewer{OrgID: "acme-org", TeamID: "acme-platform"})
	named.ItemIDs = []string{"pat-030-payments-egress-client"}
	res, err = acme.Check(context.Background(), named)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed || !slices.Equal(res.UnknownItemIDs, []string{"pat-030-payments-egress-client"}) {
		t.Fatalf("invisible named item: passed %v unknown %v", res.Passed, res.UnknownItemIDs)
	}
}

// TestProjectSpecSupersedesOrgADR: spec-210 (project globex-analytics)
// supersedes ADR-107 (org) for that project only.
func TestProjectSpecSupersedesOrgADR(t *testing.T) {
	lib, _ := loadLibrary(t, examplesDir, LibraryOptions{})
	globex := lib.For("globex")
	nats := []Dependency{{Name: "nats"}}
	analytics := &Viewer{OrgID: "globex-org", ProjectID: "globex-analytics"}
	res, err := globex.Check(context.Background(), CheckInput{Dependencies: nats, Viewer: analytics})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed || len(res.Superseded) != 1 || res.Superseded[0].Item.ID != "adr-107-event-broker" ||
		res.Superseded[0].By.ID != "spec-210-analytics-keeps-nats" {
		t.Fatalf("analytics project: passed %v superseded %+v violations %+v", res.Passed, res.Superseded, res.Violations)
	}
	// Named explicitly, the superseded item is still left out.
	res, err = globex.Check(context.Background(), CheckInput{Dependencies: nats, Viewer: analytics, ItemIDs: []string{"adr-107-event-broker"}})
	if err != nil || !res.Passed || len(res.Superseded) != 1 {
		t.Fatalf("named superseded item: %v %+v", err, res)
	}
	// The project's own rule still applies.
	res, err = globex.Check(context.Background(), CheckInput{Dependencies: []Dependency{{Name: "amqplib"}}, Viewer: analytics})
	if err != nil || len(res.Violations) != 1 || res.Violations[0].ItemID != "spec-210-analytics-keeps-nats" || res.Violations[0].Layer != LayerProject {
		t.Fatalf("analytics amqplib: %v %+v", err, res.Violations)
	}
	other := &Viewer{OrgID: "globex-org", ProjectID: "globex-shop"}
	res, err = globex.Check(context.Background(), CheckInput{Dependencies: nats, Viewer: other})
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || len(res.Superseded) != 0 || res.Violations[0].ItemID != "adr-107-event-broker" || res.Violations[0].Layer != LayerOrg {
		t.Fatalf("shop project: passed %v superseded %+v violations %+v", res.Passed, res.Superseded, res.Violations)
	}
	if by := globex.SupersededByFor(mustGet(t, globex, "adr-107-event-broker"), other); len(by) != 0 {
		t.Errorf("the shop project learns of the analytics project's spec: %v", by)
	}
}

func mustGet(tb testing.TB, s *Set, id string) *Item {
	tb.Helper()
	it, ok := s.Get(id)
	if !ok {
		tb.Fatalf("no item %s", id)
	}
	return it
}

// TestBroaderItemDoesNotSupersedeNarrower: supersession only runs from a
// narrower (or same) layer to a broader one.
func TestBroaderItemDoesNotSupersedeNarrower(t *testing.T) {
	team := mustParse(t, "team.md", itemSource("team-rule", "layer: team", "owner: t1",
		"constraints:\n  - {operator: must_not_use, target: dependency, pattern: leftpad, severity: block}"))
	org := mustParse(t, "org.md", itemSource("org-rule", "layer: org", "owner: o1", "supersedes: team-rule"))
	set := mustSet(t, team, org)
	res, err := set.Check(context.Background(), CheckInput{Dependencies: []Dependency{{Name: "leftpad"}}, Viewer: &Viewer{OrgID: "o1", TeamID: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || len(res.Superseded) != 0 {
		t.Fatalf("an org item suppressed a team rule: %+v", res)
	}
}

func TestLibraryOwnerErrors(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"tenants/acme/ok.md":          itemSource("ok", "layer: team", "owner: acme-web"),
		"tenants/acme/no-owner.md":    itemSource("no-owner", "layer: team"),
		"tenants/acme/bad-owner.md":   itemSource("bad-owner", "layer: project", "owner: 'has spaces'"),
		"tenants/acme/list-owner.md":  itemSource("list-owner", "layer: org", "owner: [a, b]"),
		"tenants/acme/company.md":     itemSource("company-owned", "layer: company", "owner: acme"),
		"company-wide/team.md":        itemSource("cw-team", "layer: team", "owner: x"),
		"company-wide/company.md":     itemSource("cw", "layer: company"),
		"tenants/globex/cw.md":        itemSource("cw", "layer: company"),
		"stray.md":                    itemSource("stray", "layer: company"),
		"tenants/globex/ok-globex.md": itemSource("ok-globex", "layer: company"),
	})
	lib, errs := loadLibrary(t, dir, LibraryOptions{CompanyWide: true})
	reasons := map[string]string{}
	for _, e := range errs {
		reasons[e.Path] = e.Tenant + ": " + e.Reason
	}
	want := map[string]string{
		"tenants/acme/no-owner.md":   `acme: missing "owner"`,
		"tenants/acme/bad-owner.md":  `acme: invalid owner "has spaces"`,
		"tenants/acme/list-owner.md": `acme: "owner" must be a string`,
		"tenants/acme/company.md":    `acme: invalid owner: a company item belongs to its whole tenant`,
		"company-wide/team.md":       `: a company-wide item must have layer company`,
		"tenants/globex/cw.md":       `globex: duplicate id "cw"`,
		"stray.md":                   `: not served`,
	}
	for p, w := range want {
		if !strings.HasPrefix(reasons[p], w) {
			t.Errorf("%s: reason %q, want it to start with %q", p, reasons[p], w)
		}
	}
	if len(errs) != len(want) {
		t.Errorf("%d load errors, want %d: %v", len(errs), len(want), errs)
	}
	if got := ids(lib.For("acme").All()); !slices.Equal(got, []string{"cw", "ok"}) {
		t.Errorf("acme serves %v, want only the valid items", got)
	}
	if got := ids(lib.For("globex").All()); !slices.Equal(got, []string{"cw", "ok-globex"}) {
		t.Errorf("globex serves %v", got)
	}
	if it := mustGet(t, lib.For("globex"), "cw"); it.Tenant != "" || it.Path != "company-wide/company.md" {
		t.Errorf("the published item was shadowed: %+v", it)
	}
}

func TestLibrarySingleTenantLayout(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"adrs/a.md":     itemSource("a", "layer: org"),
		"patterns/b.md": itemSource("b", "layer: team", "owner: web"),
		"c.md":          itemSource("c", "layer: company"),
	})
	lib, errs := loadLibrary(t, dir, LibraryOptions{Tenants: []string{"acme"}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if lib.Layout() != LayoutSingleTenant || lib.For("acme").Len() != 3 || lib.For("globex").Len() != 0 {
		t.Fatalf("layout %s, acme %d items, globex %d", lib.Layout(), lib.For("acme").Len(), lib.For("globex").Len())
	}
	notes := strings.Join(lib.Notes(), "\n")
	if !strings.Contains(notes, `tenant "acme"`) || !strings.Contains(notes, "1 org, team or project item(s) have no owner") {
		t.Errorf("notes do not say what was assumed: %s", notes)
	}
	// The unowned org item is seen by every caller of the tenant; the owned
	// team item by its team only.
	if got := ids(lib.For("acme").Visible(&Viewer{TeamID: "mobile"})); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("visible to team mobile: %v", got)
	}
	for _, tenants := range [][]string{nil, {"acme", "globex"}} {
		if _, _, err := LoadLibrary(dir, LibraryOptions{Tenants: tenants}); err == nil || !strings.Contains(err.Error(), "tenants/<tenant>/") {
			t.Errorf("tenants %v: err = %v, want the single-tenant layout refused", tenants, err)
		}
	}
}

func TestLibraryDevelopment(t *testing.T) {
	lib, errs := loadLibrary(t, examplesDir, LibraryOptions{Tenants: []string{"default"}, Development: true})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !lib.Development() || lib.For("default").Len() != 10 {
		t.Fatalf("development: %v, %d items; want every item of every tenant and company-wide/", lib.Development(), lib.For("default").Len())
	}
}
