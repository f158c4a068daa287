package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// Principals of the knowledge-scope auth file: acme's teams and projects
// as the examples' owners name them, globex, and initech, a tenant with no
// knowledge of its own.
const (
	keyPlatform = "tsk_acme_platform_0123456789" // acme-org, team acme-platform, project acme-shop
	keyPayments = "tsk_acme_payments_0123456789" // acme-org, team acme-payments
	keyNoTeam   = "tsk_acme_noteam_0123456789ab" // acme-org only
	keyAnalytic = "tsk_globex_analytics_0123456" // globex-org, project globex-analytics
	keyGlobex   = "tsk_globex_admin_0123456789a" // globex-org
	keyInitech  = "tsk_initech_admin_0123456789" // no identifiers
)

const scopeAuthFile = `api_keys:
  - {key: ` + keyPlatform + `, subject: platform, tenant: acme, permissions: ["*"], identifiers: {org_id: acme-org, team_id: acme-platform, project_id: acme-shop}}
  - {key: ` + keyPayments + `, subject: payments, tenant: acme, permissions: ["*"], identifiers: {org_id: acme-org, team_id: acme-payments}}
  - {key: ` + keyNoTeam + `, subject: noteam, tenant: acme, permissions: ["*"], identifiers: {org_id: acme-org}}
  - {key: ` + keyAnalytic + `, subject: analytics, tenant: globex, permissions: ["*"], identifiers: {org_id: globex-org, project_id: globex-analytics}}
  - {key: ` + keyGlobex + `, subject: globex-admin, tenant: globex, permissions: ["*"], identifiers: {org_id: globex-org}}
  - {key: ` + keyInitech + `, subject: initech-admin, tenant: initech, permissions: ["*"]}
`

// TestKnowledgeBelongsToTenantAndScope: with one knowledge
// directory and several tenants, no knowledge of one tenant reaches
// another through any tool or resource, and one team's constraints do not
// apply to another team's checks, on every transport and both stores.
func TestKnowledgeBelongsToTenantAndScope(t *testing.T) {
	for _, backend := range []string{testserver.SQLite, testserver.Postgres} {
		t.Run(backend, func(t *testing.T) {
			authPath := filepath.Join(t.TempDir(), "auth.yaml")
			if err := os.WriteFile(authPath, []byte(scopeAuthFile), 0o600); err != nil {
				t.Fatal(err)
			}
			// The examples, and one acme item whose owner is malformed.
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(testserver.KnowledgeDir(t))); err != nil {
				t.Fatal(err)
			}
			bad := "---\nid: spec-bad-owner\ntype: spec\nlayer: project\nowner: [acme-shop, acme-reports]\ntitle: Bad owner\nstatus: accepted\n---\nbody\n"
			if err := os.WriteFile(filepath.Join(dir, "tenants", "acme", "specs", "spec-bad-owner.md"), []byte(bad), 0o600); err != nil {
				t.Fatal(err)
			}
			s := testserver.New(t, testserver.Options{Backend: backend, Configure: func(c *server.Config) { c.AuthFile, c.KnowledgeDir = authPath, dir }})
			for _, tr := range []Transport{GRPC{S: s}, REST{S: s}, MCP{S: s}} {
				t.Run(tr.Name(), func(t *testing.T) { testKnowledgeScope(t, tr) })
			}
			t.Run("mcp resources", func(t *testing.T) { testKnowledgeResources(t, MCP{S: s}) })
		})
	}
}

func testKnowledgeScope(t *testing.T, tr Transport) {
	ctx := context.Background()
	call := func(token, tool string, args map[string]any) Outcome {
		t.Helper()
		out, err := tr.Call(ctx, token, tool, args, nil)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return out
	}
	data := func(out Outcome) map[string]any {
		t.Helper()
		if out.Code != "OK" {
			t.Fatalf("code %s: %v", out.Code, out.Error)
		}
		return out.Result["data"].(map[string]any)
	}
	queryIDs := func(token, text string) []string {
		t.Helper()
		d := data(call(token, "query-knowledge", map[string]any{"query": text, "status": []any{"accepted", "superseded", "proposed"}, "limit": 100}))
		var ids []string
		for _, it := range d["items"].([]any) {
			ids = append(ids, it.(map[string]any)["id"].(string))
		}
		slices.Sort(ids)
		return ids
	}
	check := func(token, dep string) map[string]any {
		t.Helper()
		return data(call(token, "check-knowledge", map[string]any{"dependencies": []any{map[string]any{"name": dep}}}))
	}
	violations := func(d map[string]any) [][3]string {
		var out [][3]string
		for _, v := range d["violations"].([]any) {
			m := v.(map[string]any)
			out = append(out, [3]string{m["knowledgeItemId"].(string), m["layer"].(string), m["owner"].(string)})
		}
		return out
	}

	t.Run("two tenants", func(t *testing.T) {
		if got := queryIDs(keyGlobex, "broker database selection"); !slices.Equal(got, []string{"adr-107-event-broker"}) {
			t.Errorf("globex query = %v, want only its own ADR-107", got)
		}
		if got := queryIDs(keyPlatform, "broker"); len(got) != 0 {
			t.Errorf("acme query broker = %v, want nothing of globex", got)
		}
		for _, id := range []string{"adr-042-database-selection", "adr-999-does-not-exist"} {
			out := call(keyGlobex, "show-knowledge", map[string]any{"id": id})
			if out.Code != "NOT_FOUND" {
				t.Errorf("globex show %s = %s, want NOT_FOUND", id, out.Code)
			}
		}
		if d := check(keyGlobex, "mysql2"); d["passed"] != true || len(violations(d)) != 0 {
			t.Errorf("acme's ADR-042 applies to globex's check: %v", d)
		}
		if d := check(keyPlatform, "amqplib"); d["passed"] != true {
			t.Errorf("globex's ADR-107 applies to acme's check: %v", d)
		}
		d := check(keyGlobex, "amqplib")
		if got := violations(d); d["passed"] != false || !slices.Equal(got, [][3]string{{"adr-107-event-broker", "org", "globex-org"}}) {
			t.Errorf("globex's own check = %v", got)
		}
		d = data(call(keyGlobex, "sync-knowledge", map[string]any{}))
		res := d["result"].(map[string]any)
		if n := res["added"].(float64) + res["updated"].(float64) + res["unchanged"].(float64); n != 2 || res["failures"].(float64) != 0 {
			t.Errorf("globex sync = %v, want its ADR-107 and the company-wide policy, no failure", res)
		}
		if d := data(call(keyGlobex, "get-sync-status", map[string]any{})); len(d["failures"].([]any)) != 0 {
			t.Errorf("globex status failures = %v", d["failures"])
		}
	})

	t.Run("a tenant without knowledge", func(t *testing.T) {
		if got := queryIDs(keyInitech, ""); !slices.Equal(got, []string{"pol-012-no-plaintext-secrets"}) {
			t.Errorf("initech query = %v, want only the company-wide policy", got)
		}
		if d := check(keyInitech, "mysql2"); d["passed"] != true {
			t.Errorf("initech check = %v", d)
		}
	})

	t.Run("two teams of one tenant", func(t *testing.T) {
		d := check(keyPayments, "axios")
		if got := violations(d); d["passed"] != false || !slices.Equal(got, [][3]string{{"pat-030-payments-egress-client", "team", "acme-payments"}}) {
			t.Errorf("payments check = %v", got)
		}
		for _, key := range []string{keyPlatform, keyNoTeam} {
			if d := check(key, "axios"); d["passed"] != true || len(violations(d)) != 0 {
				t.Errorf("the payments team's pattern applies to another caller: %v", d)
			}
		}
		if out := call(keyPlatform, "show-knowledge", map[string]any{"id": "pat-030-payments-egress-client"}); out.Code != "NOT_FOUND" {
			t.Errorf("platform shows the payments team's item: %s", out.Code)
		}
		if got := queryIDs(keyPayments, "api naming"); slices.Contains(got, "pat-013-api-naming") {
			t.Errorf("payments finds the platform team's pattern: %v", got)
		}
	})

	t.Run("a caller without a team id", func(t *testing.T) {
		want := []string{"adr-017-mongodb-for-events", "adr-042-database-selection", "pol-007-structured-logging", "pol-012-no-plaintext-secrets"}
		if got := queryIDs(keyNoTeam, ""); !slices.Equal(got, want) {
			t.Errorf("no-team query = %v, want company and org items only %v", got, want)
		}
	})

	t.Run("malformed owner", func(t *testing.T) {
		if out := call(keyPlatform, "show-knowledge", map[string]any{"id": "spec-bad-owner"}); out.Code != "NOT_FOUND" {
			t.Errorf("an item with a malformed owner is served: %s", out.Code)
		}
		d := data(call(keyPlatform, "sync-knowledge", map[string]any{}))
		var reasons []string
		for _, f := range d["failedItems"].([]any) {
			m := f.(map[string]any)
			if m["path"] == "tenants/acme/specs/spec-bad-owner.md" {
				reasons = append(reasons, m["reason"].(string))
			}
		}
		if len(reasons) != 1 || reasons[0] != `"owner" must be a string (line 5)` {
			t.Errorf("sync failures for the malformed owner = %v", reasons)
		}
	})

	t.Run("precedence", func(t *testing.T) {
		d := check(keyPlatform, "mysql2")
		if got := violations(d); d["passed"] != false || !slices.Equal(got, [][3]string{{"adr-042-database-selection", "org", "acme-org"}}) {
			t.Errorf("platform mysql2 = %v", got)
		}
		// spec-210 (project globex-analytics) supersedes ADR-107 (org) for
		// that project only.
		d = check(keyAnalytic, "nats")
		sup, _ := d["superseded"].([]any)
		if d["passed"] != true || len(sup) != 1 {
			t.Fatalf("analytics nats = %v, want passed with ADR-107 superseded", d)
		}
		s := sup[0].(map[string]any)
		if s["knowledgeItemId"] != "adr-107-event-broker" || s["supersededBy"] != "spec-210-analytics-keeps-nats" ||
			s["layer"] != "org" || s["supersededByLayer"] != "project" {
			t.Errorf("superseded = %v", s)
		}
		d = check(keyGlobex, "nats")
		if got := violations(d); d["passed"] != false || !slices.Equal(got, [][3]string{{"adr-107-event-broker", "org", "globex-org"}}) {
			t.Errorf("globex without the project: nats = %v", got)
		}
		show := data(call(keyGlobex, "show-knowledge", map[string]any{"id": "adr-107-event-broker"}))
		if by := show["item"].(map[string]any)["supersededBy"].([]any); len(by) != 0 {
			t.Errorf("a caller outside the analytics project learns of its spec: %v", by)
		}
	})
}

func testKnowledgeResources(t *testing.T, m MCP) {
	ctx := context.Background()
	res, rerr, err := m.Protocol(ctx, keyGlobex, "resources/list", map[string]any{})
	if err != nil || rerr != nil {
		t.Fatalf("resources/list: %v %v", err, rerr)
	}
	var list struct {
		Resources []struct{ URI string } `json:"resources"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	if !slices.Equal(uris, []string{"knowledge://adr-107-event-broker", "knowledge://pol-012-no-plaintext-secrets"}) {
		t.Errorf("globex resources = %v", uris)
	}
	_, rerr, err = m.Protocol(ctx, keyGlobex, "resources/read", map[string]any{"uri": "knowledge://adr-042-database-selection"})
	if err != nil || rerr == nil || rerr.Code != -32002 {
		t.Errorf("globex reads acme's ADR-042: err %v, rpc error %v; want resource not found", err, rerr)
	}
	if _, rerr, err = m.Protocol(ctx, keyPlatform, "resources/read", map[string]any{"uri": "knowledge://adr-042-database-selection"}); err != nil || rerr != nil {
		t.Errorf("acme reads its own ADR-042: %v %v", err, rerr)
	}
	res, _, err = m.Protocol(ctx, keyPlatform, "completion/complete", map[string]any{
		"ref": map[string]any{"type": "ref/resource", "uri": "knowledge://{id}"}, "argument": map[string]any{"name": "id", "value": "adr-"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var comp struct {
		Completion struct{ Values []string } `json:"completion"`
	}
	_ = json.Unmarshal(res, &comp)
	if slices.Contains(comp.Completion.Values, "adr-107-event-broker") || !slices.Contains(comp.Completion.Values, "adr-042-database-selection") {
		t.Errorf("acme completions = %v", comp.Completion.Values)
	}
}
