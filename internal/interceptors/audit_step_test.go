package interceptors_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/store"
)

// recordingAudit keeps what the auditor writes.
type recordingAudit struct {
	mu     sync.Mutex
	events []store.AuditEvent
}

func (s *recordingAudit) AppendAudit(_ context.Context, e *store.AuditEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, *e)
	return nil
}

func (s *recordingAudit) ListAudit(context.Context, store.AuditFilter) ([]store.AuditEvent, string, error) {
	return nil, "", nil
}

func (s *recordingAudit) all() []store.AuditEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]store.AuditEvent(nil), s.events...)
}

// auditOne runs the audit step over one call whose later steps set the
// decision (as policy does) and answer err; the auditor is closed (so
// flushed) before the records are returned.
func auditOne(t *testing.T, c *interceptors.Call, decision, reason string, answer error) []store.AuditEvent {
	t.Helper()
	st := &recordingAudit{}
	a := runAuditor(t, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if c.Facts.TraceID == "" {
		c.Facts.TraceID, c.Facts.CorrelationID = "trace-a", "corr-a"
	}
	c.Facts.Start = time.Now()
	next := &fakeNext{resp: func(context.Context, any) (any, error) {
		c.Decision, c.Reason = decision, reason
		return nil, answer
	}}
	_, err := runStep(context.Background(), interceptors.AuditStep(a, interceptors.NewMetrics(nil)), c, nil, next)
	if !errors.Is(err, answer) {
		t.Fatalf("err %v, want the handler's %v", err, answer)
	}
	if c.Tool != nil && !c.Tool.Spec.GetReadOnly() && (c.Decision == "allow" || c.Decision == "error") {
		// A call let through to a tool that may change state is answered
		// only once its record is durable.
		if n := len(st.all()); n != 1 {
			t.Errorf("side effect answered with %d durable records, want 1", n)
		}
	}
	a.Close()
	return st.all()
}

func TestAuditStepRecordsTheCall(t *testing.T) {
	tool := memTool(t, searchMethod, nil)
	c := &interceptors.Call{Tool: tool, Principal: fullPrincipal(), Facts: callctx.Facts{Transport: callctx.TransportMCP}}
	es := auditOne(t, c, "allow", "policy passed", nil)
	if len(es) != 1 {
		t.Fatalf("%d records, want 1", len(es))
	}
	e := es[0]
	want := store.AuditEvent{ID: e.ID, At: c.Facts.Start.UTC(), Tool: tool.Name, ToolVersion: tool.Version, Subject: "alice", Tenant: "acme",
		TraceID: "trace-a", CorrelationID: "corr-a", Transport: "mcp", Decision: "allow", Reason: "policy passed", Code: "OK", LatencyMs: e.LatencyMs}
	if e != want {
		t.Errorf("record\n %+v\nwant\n %+v", e, want)
	}
}

func TestAuditStepDecisionOfFailures(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		decision, reason         string
		err                      error
		wantDecision, wantReason string
		wantCode                 string
	}{
		{"policy denied", "deny", "read-only principal", toolerr.New(toolerr.Forbidden, "ro"), "deny", "read-only principal", "FORBIDDEN"},
		{"allowed then failed", "allow", "policy passed", toolerr.New(toolerr.ProviderError, "down"), "error", "PROVIDER_ERROR", "PROVIDER_ERROR"},
		{"refused before policy decided", "", "", toolerr.New(toolerr.InvalidInput, "bad"), "deny", "INVALID_INPUT", "INVALID_INPUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &interceptors.Call{Tool: memTool(t, addMethod, nil), Principal: fullPrincipal()}
			es := auditOne(t, c, tc.decision, tc.reason, tc.err)
			if len(es) != 1 {
				t.Fatalf("%d records, want 1", len(es))
			}
			if e := es[0]; e.Decision != tc.wantDecision || e.Reason != tc.wantReason || e.Code != tc.wantCode {
				t.Errorf("record %s/%s/%s, want %s/%s/%s", e.Decision, e.Reason, e.Code, tc.wantDecision, tc.wantReason, tc.wantCode)
			}
			if c.Decision != tc.wantDecision {
				t.Errorf("call decision %q, want the audited %q", c.Decision, tc.wantDecision)
			}
		})
	}
}

func TestAuditStepSkipsAnonymousAndNonTools(t *testing.T) {
	// Failed authentication: no principal, nothing in the audit store.
	if es := auditOne(t, &interceptors.Call{Tool: memTool(t, searchMethod, nil)}, "", "", toolerr.New(toolerr.Unauthorized, "no")); len(es) != 0 {
		t.Errorf("unauthenticated call audited: %v", es)
	}
	if es := auditOne(t, &interceptors.Call{FullMethod: "/toolsvc.v1.ToolService/ListTools", Principal: fullPrincipal()}, "", "", nil); len(es) != 0 {
		t.Errorf("listing audited: %v", es)
	}
}
