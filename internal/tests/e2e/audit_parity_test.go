package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// Keys of the audit parity test's auth file: one with every permission,
// one that may only read memories and knowledge (a read-only role), one
// no one issued.
const (
	parityFull   = "tsk_parityfull_0123456789abcdef"
	parityScoped = "tsk_parityscoped_0123456789abcdef"
	parityBad    = "tsk_paritybad_0123456789abcdef"
)

func parityAuthFile(t *testing.T) string {
	t.Helper()
	ids := `{org_id: acme-org, team_id: acme-team, project_id: acme-project, user_id: acme-user}`
	body := fmt.Sprintf(`api_keys:
  - key_sha256: %q
    subject: full
    tenant: acme
    permissions: ["*"]
    identifiers: %s
  - key_sha256: %q
    subject: scoped
    tenant: acme
    permissions: ["memory:read", "knowledge:read"]
    identifiers: %s
`, auth.HashKey(parityFull), ids, auth.HashKey(parityScoped), ids)
	path := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuditRecordsAgree makes the same calls on three fresh servers, one
// per transport, and requires the same audit records, differing only in
// transport and trace: every tool allowed, a tool's own error, invalid
// input, rate limited, denied by permission (list-audit-events for a key
// that may only read memories and knowledge), and an unknown tool. A
// failed authentication leaves no record on any transport.
func TestAuditRecordsAgree(t *testing.T) {
	type step struct {
		token, tool string
		args        func(lastID string) map[string]any
		code        string // the expected outcome, so the test cannot pass on a broken server
	}
	none := func(string) map[string]any { return map[string]any{} }
	steps := []step{
		{parityFull, "add-memory", func(string) map[string]any {
			return map[string]any{"content": "The payments team deploys on Tuesdays after the change review"}
		}, "OK"},
		{parityFull, "search-memories", func(string) map[string]any { return map[string]any{"query": "payments deploys", "threshold": 0.2} }, "OK"},
		{parityFull, "summarize-memories", func(string) map[string]any { return map[string]any{"query": "payments", "threshold": 0.2} }, "OK"},
		{parityFull, "delete-memory", func(id string) map[string]any { return map[string]any{"memoryId": id} }, "OK"},
		{parityFull, "delete-memory", func(id string) map[string]any { return map[string]any{"memoryId": id} }, "NOT_FOUND"},
		{parityFull, "query-knowledge", func(string) map[string]any { return map[string]any{"query": "database selection"} }, "OK"},
		{parityFull, "show-knowledge", func(string) map[string]any { return map[string]any{"id": "adr-042-database-selection"} }, "OK"},
		{parityFull, "check-knowledge", func(string) map[string]any {
			return map[string]any{"dependencies": []any{map[string]any{"name": "mysql2"}}}
		}, "OK"},
		{parityFull, "get-sync-status", none, "OK"},
		{parityFull, "list-audit-events", none, "OK"},
		{parityFull, "add-memory", func(string) map[string]any { return map[string]any{"content": ""} }, "INVALID_INPUT"},
		{parityFull, "no-such-tool", none, "NOT_FOUND"},
		{parityScoped, "list-audit-events", none, "NOT_FOUND"},
		{parityScoped, "no-such-tool", none, "NOT_FOUND"},
		{parityScoped, "add-memory", func(string) map[string]any { return map[string]any{"content": "not for this key"} }, "NOT_FOUND"},
		{parityScoped, "search-memories", func(string) map[string]any { return map[string]any{"query": "payments"} }, "OK"},
		{parityBad, "get-sync-status", none, "UNAUTHORIZED"},
		{parityBad, "no-such-tool", none, "UNAUTHORIZED"},
	}
	// sync-knowledge admits 6 calls a minute per principal: the 7th is
	// rate limited.
	for i := range 7 {
		code := "OK"
		if i == 6 {
			code = "RATE_LIMITED"
		}
		steps = append(steps, step{parityFull, "sync-knowledge", none, code})
	}
	authFile := parityAuthFile(t)
	newServer := func() *testserver.Server {
		return testserver.New(t, testserver.Options{Configure: func(c *server.Config) { c.AuthFile = authFile }})
	}
	run := func(tr Transport, srv *testserver.Server) []store.AuditEvent {
		lastID := ""
		audited := 0
		for i, st := range steps {
			headers := map[string]string{"x-agent-id": "parity-agent", "x-agent-version": "1.0.0", "x-correlation-id": fmt.Sprintf("step-%02d", i)}
			o, err := tr.Call(context.Background(), st.token, st.tool, st.args(lastID), headers)
			if err != nil {
				t.Fatalf("%s step %d %s: %v", tr.Name(), i, st.tool, err)
			}
			if o.Code != st.code {
				t.Fatalf("%s step %d %s = %s %v, want %s", tr.Name(), i, st.tool, o.Code, o.Error, st.code)
			}
			if st.tool == "add-memory" && o.Code == "OK" {
				lastID = o.Result["data"].(map[string]any)["memoryId"].(string)
			}
			if st.token != parityBad {
				audited++
			}
		}
		return auditTrail(t, srv, audited, tr.Name())
	}
	grpcSrv := newServer()
	want := run(GRPC{S: grpcSrv}, grpcSrv)
	var tools []string
	for _, e := range want {
		tools = append(tools, e.Tool)
	}
	for _, tl := range grpcSrv.Registry().Latest() {
		if !slices.Contains(tools, tl.Name) {
			t.Errorf("no audit record of %s: the parity test must call every tool", tl.Name)
		}
	}
	for _, tr := range []func(*testserver.Server) Transport{
		func(s *testserver.Server) Transport { return REST{S: s} },
		func(s *testserver.Server) Transport { return MCP{S: s} },
	} {
		srv := newServer()
		tp := tr(srv)
		got := run(tp, srv)
		for i := range want {
			w, g := want[i], got[i]
			if g.Transport != tp.Name() || w.Transport != "grpc" {
				t.Errorf("record %d: transports %q and %q", i, w.Transport, g.Transport)
			}
			if g.TraceID == "" || g.TraceID == w.TraceID {
				t.Errorf("record %d: trace %q beside grpc's %q", i, g.TraceID, w.TraceID)
			}
			w.Transport, g.Transport, w.TraceID, g.TraceID = "", "", "", ""
			if w != g {
				t.Errorf("%s record %d differs from grpc's:\ngrpc: %+v\n%s: %+v", tp.Name(), i, w, tp.Name(), g)
			}
		}
	}
	// The decisions the issue names, as the chain records them.
	for i, wantDecision := range map[int]string{0: "allow", 4: "error", 10: "error", 11: "deny", 12: "deny", 13: "deny"} {
		if want[i].Decision != wantDecision {
			t.Errorf("record %d (%s) decision %q, want %q", i, want[i].Tool, want[i].Decision, wantDecision)
		}
	}
	if r := want[12]; r.Tool != "list-audit-events" || r.Subject != "scoped" || r.Reason != "permission: missing audit:read" {
		t.Errorf("the scoped key's list-audit-events is recorded as %+v", r)
	}
	if r := want[11]; r.Tool != "no-such-tool" || r.Reason != "unknown_tool: no such tool" || r.Code != "NOT_FOUND" {
		t.Errorf("the unknown tool is recorded as %+v", r)
	}
	if r := want[len(want)-1]; r.Code != "RATE_LIMITED" || r.Reason != "rate limited" {
		t.Errorf("the rate-limited call is recorded as %+v", r)
	}
}

// auditTrail waits for n audit records of tenant acme (they are written
// in the background) and returns them in call order, with the fields that
// differ between two runs of the same calls (id, time, latency) cleared.
func auditTrail(t *testing.T, srv *testserver.Server, n int, transport string) []store.AuditEvent {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, _, err := srv.Store().ListAudit(context.Background(), store.AuditFilter{Tenant: "acme", Limit: store.MaxAuditLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(events) > n {
			t.Fatalf("%s: %d audit records, want %d (a failed authentication was audited?)", transport, len(events), n)
		}
		if len(events) == n {
			// Give a late record (one that should not exist) the time to land.
			time.Sleep(200 * time.Millisecond)
			again, _, _ := srv.Store().ListAudit(context.Background(), store.AuditFilter{Tenant: "acme", Limit: store.MaxAuditLimit})
			if len(again) != n {
				t.Fatalf("%s: %d audit records, want %d", transport, len(again), n)
			}
			slices.SortFunc(events, func(a, b store.AuditEvent) int {
				if a.CorrelationID < b.CorrelationID {
					return -1
				}
				if a.CorrelationID > b.CorrelationID {
					return 1
				}
				return 0
			})
			for i := range events {
				events[i].ID, events[i].At, events[i].LatencyMs = 0, time.Time{}, 0
			}
			return events
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d audit records after 10s, want %d", transport, len(events), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMissingPermissionIsNamedToTheOperator: a caller without a tool's
// permission is answered as for a missing tool, and the server's log line
// names the permission it lacks.
func TestMissingPermissionIsNamedToTheOperator(t *testing.T) {
	creds := testserver.WriteCredentials(t)
	logs := &testenv.Buffer{}
	s := testserver.New(t, testserver.Options{
		Configure: func(c *server.Config) { c.AuthFile = creds.AuthFile },
		Logger:    slog.New(slog.NewJSONHandler(logs, nil)),
	})
	for _, tr := range transportsOf(s) {
		if o := call(t, tr, creds.NoPermission, "add-memory", map[string]any{"content": "x"}); o.Code != "NOT_FOUND" {
			t.Fatalf("%s: %s, want NOT_FOUND", tr.Name(), o.Code)
		}
	}
	var n int
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"msg":"call finished"`) && strings.Contains(l, `"tool":"add-memory"`) {
			n++
			if !strings.Contains(l, `"deny_reason":"permission: missing memory:write"`) {
				t.Errorf("log line without the missing permission: %s", l)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d call lines for add-memory, want 3:\n%s", n, logs.String())
	}
}
