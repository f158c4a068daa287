package interceptors

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

// batchStore records the batches the auditor writes.
type batchStore struct {
	mu      sync.Mutex
	batches [][]string // trace ids per write
	at      []time.Time
}

func (s *batchStore) AppendAudit(_ context.Context, e *store.AuditEvent) error {
	return s.AppendAudits(context.Background(), []*store.AuditEvent{e})
}

func (s *batchStore) AppendAudits(_ context.Context, es []*store.AuditEvent) error {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.TraceID
	}
	s.mu.Lock()
	s.batches = append(s.batches, ids)
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
	return nil
}

func (s *batchStore) ListAudit(context.Context, store.AuditFilter) ([]store.AuditEvent, string, error) {
	return nil, "", nil
}

func (s *batchStore) written() (n, writes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.batches {
		n += len(b)
	}
	return n, len(s.batches)
}

func newTestAuditor(t *testing.T) (*Auditor, *batchStore) {
	t.Helper()
	st := &batchStore{}
	a := NewAuditor(st, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics(nil))
	t.Cleanup(a.Close)
	return a, st
}

// TestAuditorGroupsRecordsOfALinger checks group commit: records queued
// while the writer lingers reach the store together, after the linger,
// and in order.
func TestAuditorGroupsRecordsOfALinger(t *testing.T) {
	a, st := newTestAuditor(t)
	start := time.Now()
	for i := range 100 {
		a.Record(&store.AuditEvent{TraceID: fmt.Sprint(i)})
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, _ := st.written(); n == 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("records not written within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.batches) > 2 {
		t.Errorf("100 records queued at once took %d writes, want them grouped", len(st.batches))
	}
	if el := st.at[0].Sub(start); el < auditLinger/2 {
		t.Errorf("first write after %s, want the writer to linger about %s", el, auditLinger)
	}
	var all []string
	for _, b := range st.batches {
		all = append(all, b...)
	}
	for i, id := range all {
		if id != fmt.Sprint(i) {
			t.Fatalf("record %d is %s: order lost", i, id)
		}
	}
}

// TestAuditorFlushesAtCloseAndSplitsLargeBatches queues more than one
// transaction's worth, then closes at once: Close returns without waiting
// out the linger, and every record is written in batches of at most
// maxAuditBatch.
func TestAuditorFlushesAtCloseAndSplitsLargeBatches(t *testing.T) {
	st := &batchStore{}
	a := NewAuditor(st, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics(nil))
	const n = maxAuditBatch + maxAuditBatch/2
	for i := range n {
		a.Record(&store.AuditEvent{TraceID: fmt.Sprint(i)})
	}
	start := time.Now()
	a.Close()
	if el := time.Since(start); el >= auditLinger {
		t.Errorf("Close took %s, want it to end the linger at once", el)
	}
	got, writes := st.written()
	if got != n {
		t.Fatalf("%d of %d records written", got, n)
	}
	for _, b := range st.batches {
		if len(b) > maxAuditBatch {
			t.Errorf("a write of %d records, want at most %d", len(b), maxAuditBatch)
		}
	}
	if writes < 2 {
		t.Errorf("%d writes for %d records", writes, n)
	}
}

// TestAuditorNudgedByAFillingQueue fills half the queue: the writer stops
// lingering and writes before the linger is over.
func TestAuditorNudgedByAFillingQueue(t *testing.T) {
	a, st := newTestAuditor(t)
	start := time.Now()
	for i := range auditQueue/2 + 8 { // the writer holds the first
		a.Record(&store.AuditEvent{TraceID: fmt.Sprint(i)})
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, writes := st.written(); writes > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing written within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	st.mu.Lock()
	first := st.at[0].Sub(start)
	st.mu.Unlock()
	if first >= auditLinger {
		t.Errorf("first write after %s with the queue half full, want it before the %s linger ends", first, auditLinger)
	}
}
