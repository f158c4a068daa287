package interceptors_test

import (
	"context"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/auditlog"
)

// countingStore keeps every audit record, whatever its tenant.
type countingStore struct {
	mu     sync.Mutex
	events []store.AuditEvent
}

func (s *countingStore) AppendAudit(_ context.Context, e *store.AuditEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, *e)
	return nil
}

func (s *countingStore) ListAudit(context.Context, store.AuditFilter) ([]store.AuditEvent, string, error) {
	return nil, "", nil
}

// TestFailedAuthenticationIsNotAudited: refused credentials, on a tool's
// method and on CallTool of a tool that does not exist, are counted by
// transport and reason and leave no audit record; an authenticated call
// after them does.
func TestFailedAuthenticationIsNotAudited(t *testing.T) {
	recs := &countingStore{}
	reg := prometheus.NewRegistry()
	var auditor *auditlog.Writer
	h := newHarness(t, func(c *interceptors.Config) {
		auditor = runAuditor(t, recs, c.Logger)
		c.Auditor = auditor
		c.AuthFailures = interceptors.NewAuthFailures(reg, c.Logger)
	})
	client := memoryv1.NewMemoryServiceClient(h.ch)
	tools := toolsvcv1.NewToolServiceClient(h.ch)
	for range 5 {
		if _, err := client.SearchMemories(as("nobody"), &memoryv1.SearchMemoriesRequest{Query: "x"}); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("a bad key = %v", err)
		}
		if _, err := tools.CallTool(context.Background(), &toolsvcv1.CallToolRequest{Name: "no-such-tool"}); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("no key = %v", err)
		}
	}
	if _, err := client.SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "x"}); err != nil {
		t.Fatal(err)
	}
	auditor.Close()
	if len(recs.events) != 1 || recs.events[0].Subject != "full" {
		t.Fatalf("audit records %+v, want the authenticated call's only", recs.events)
	}
	got := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "toolsvc_auth_failures_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["transport"]+"/"+labels["reason"]] = m.GetCounter().GetValue()
		}
	}
	if len(got) != 2 || got["grpc/invalid credentials"] != 5 || got["grpc/missing credentials"] != 5 {
		t.Fatalf("toolsvc_auth_failures_total = %v", got)
	}
}
