package interceptors_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/auditlog"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
)

// flakyAudit is a real audit store whose writes fail while down is set,
// the way a lost database or a read-only file fails them.
type flakyAudit struct {
	*sqlite.Store
	down atomic.Bool
}

var errDown = &unavailable{}

type unavailable struct{}

func (*unavailable) Error() string     { return "audit store: database is read-only" }
func (*unavailable) Unavailable() bool { return true }

func (f *flakyAudit) AppendAudit(ctx context.Context, e *store.AuditEvent) error {
	if f.down.Load() {
		return errDown
	}
	return f.Store.AppendAudit(ctx, e)
}

func (f *flakyAudit) AppendAudits(ctx context.Context, es []*store.AuditEvent) error {
	if f.down.Load() {
		return errDown
	}
	return f.Store.AppendAudits(ctx, es)
}

// newFlakyHarness is newHarness with its audit trail in a flakyAudit and
// the chain's metrics on reg.
func newFlakyHarness(t *testing.T, reg *prometheus.Registry, opts ...auditlog.Option) (*harness, *flakyAudit) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fl := &flakyAudit{Store: st}
	h := newHarness(t, func(c *interceptors.Config) {
		c.Metrics = interceptors.NewMetrics(reg)
		c.Auditor = runAuditor(t, fl, slog.New(slog.NewTextHandler(io.Discard, nil)), append(opts, auditlog.WithRegisterer(reg))...)
	})
	h.audit = st
	return h, fl
}

func auditOf(t *testing.T, st store.AuditStore, tool string) []store.AuditEvent {
	t.Helper()
	es, _, err := st.ListAudit(t.Context(), store.AuditFilter{Tenant: "acme", Tool: tool, Limit: store.MaxAuditLimit})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// TestSideEffectAnsweredOnceAudited: when add-memory (not read-only)
// answers, its record is already in the store; concurrent callers share
// the writes.
func TestSideEffectAnsweredOnceAudited(t *testing.T) {
	h, _ := newFlakyHarness(t, prometheus.NewRegistry())
	client := memoryv1.NewMemoryServiceClient(h.ch)
	if _, err := client.AddMemory(as("full"), &memoryv1.AddMemoryRequest{Content: "durable"}); err != nil {
		t.Fatal(err)
	}
	if es := auditOf(t, h.audit, "add-memory"); len(es) != 1 || es[0].Decision != store.DecisionAllow {
		t.Fatalf("right after add-memory answered, its audit records are %+v; want one allow", es)
	}
	const n = 32
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := client.AddMemory(as("full"), &memoryv1.AddMemoryRequest{Content: "durable too"})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if es := auditOf(t, h.audit, "add-memory"); len(es) != n+1 {
		t.Fatalf("after %d concurrent add-memory answered, %d audit records; want %d", n, len(es), n+1)
	}
}

// TestAuditOutageClosed: while the audit store fails, the default policy
// refuses with a retryable error — first the call whose record could not
// be written, then every call before it reaches its tool — and serves
// again once the store is back, without a restart.
func TestAuditOutageClosed(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, fl := newFlakyHarness(t, reg)
	client := memoryv1.NewMemoryServiceClient(h.ch)
	fl.down.Store(true)

	_, err := client.AddMemory(as("full"), &memoryv1.AddMemoryRequest{Content: "unaudited"})
	st, te := toolError(t, err)
	// The tool ran, so the effect may be applied: like any PROVIDER_ERROR
	// after add-memory ran, it is retryable only with an idempotency key.
	if st.Code() != codes.Unavailable || te.GetCode() != "PROVIDER_ERROR" || te.GetRetryable() {
		t.Fatalf("add-memory whose record failed: %v %s retryable=%v; want UNAVAILABLE, PROVIDER_ERROR, not retryable without a key", st.Code(), te.GetCode(), te.GetRetryable())
	}
	if te.GetDetails().GetFields()["reason"].GetStringValue() != "audit_unavailable" {
		t.Errorf("details = %v, want reason audit_unavailable", te.GetDetails())
	}

	before := h.mem.calls.Load()
	for _, call := range []func() error{
		func() error {
			_, err := client.AddMemory(as("full"), &memoryv1.AddMemoryRequest{Content: "refused"})
			return err
		},
		func() error {
			_, err := client.SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "refused"})
			return err
		},
	} {
		st, te := toolError(t, call())
		if st.Code() != codes.Unavailable || !te.GetRetryable() || te.GetRetryAfterSeconds() <= 0 {
			t.Errorf("call while the audit store fails: %v retryable=%v retryAfter=%v; want UNAVAILABLE, retryable, a retry hint",
				st.Code(), te.GetRetryable(), te.GetRetryAfterSeconds())
		}
	}
	if got := h.mem.calls.Load(); got != before {
		t.Errorf("%d calls reached the tool while the audit store failed, want none", got-before)
	}
	if v := metricValue(t, reg, "toolsvc_audit_store_failing"); v != 1 {
		t.Errorf("toolsvc_audit_store_failing = %v, want 1", v)
	}

	fl.down.Store(false)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := client.AddMemory(as("full"), &memoryv1.AddMemoryRequest{Content: "after recovery"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery within 5 s of the audit store's return: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if es := auditOf(t, h.audit, "add-memory"); len(es) == 0 || es[0].Decision != store.DecisionAllow {
		t.Errorf("newest add-memory record after recovery: %+v, want an allow", es)
	}
}

// TestAuditOutageOpen: --audit-failure=open serves while the audit store
// fails and counts every side-effect call answered without a record.
func TestAuditOutageOpen(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, fl := newFlakyHarness(t, reg, auditlog.WithFailure(auditlog.FailOpen))
	client := memoryv1.NewMemoryServiceClient(h.ch)
	fl.down.Store(true)
	for range 3 {
		if _, err := client.AddMemory(as("full"), &memoryv1.AddMemoryRequest{Content: "served"}); err != nil {
			t.Fatalf("open policy refused a call: %v", err)
		}
	}
	if v := metricValue(t, reg, "toolsvc_audit_unaudited_total"); v != 3 {
		t.Errorf("toolsvc_audit_unaudited_total = %v, want 3", v)
	}
}

// metricValue is the value of the unlabelled gauge or counter name on reg.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			return m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
