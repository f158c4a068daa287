package auditlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

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

func newTestAuditor(t *testing.T) (*Writer, *batchStore) {
	t.Helper()
	st := &batchStore{}
	a := running(t, New(st, slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(a.Close)
	return a, st
}

// running starts w's Run for the test's life, as the server does.
func running(t *testing.T, w *Writer) *Writer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// TestAuditorGroupsRecordsOfALinger checks group commit: records queued
// while the writer lingers reach the store together, after the linger,
// and in order.
func TestAuditorGroupsRecordsOfALinger(t *testing.T) {
	a, st := newTestAuditor(t)
	start := time.Now()
	for i := range 100 {
		_ = a.Record(&store.AuditEvent{TraceID: fmt.Sprint(i)})
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
	if el := st.at[0].Sub(start); el < linger/2 {
		t.Errorf("first write after %s, want the writer to linger about %s", el, linger)
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
// maxBatch.
func TestAuditorFlushesAtCloseAndSplitsLargeBatches(t *testing.T) {
	st := &batchStore{}
	a := running(t, New(st, slog.New(slog.NewTextHandler(io.Discard, nil))))
	const n = maxBatch + maxBatch/2
	for i := range n {
		_ = a.Record(&store.AuditEvent{TraceID: fmt.Sprint(i)})
	}
	start := time.Now()
	a.Close()
	if el := time.Since(start); el >= linger {
		t.Errorf("Close took %s, want it to end the linger at once", el)
	}
	got, writes := st.written()
	if got != n {
		t.Fatalf("%d of %d records written", got, n)
	}
	for _, b := range st.batches {
		if len(b) > maxBatch {
			t.Errorf("a write of %d records, want at most %d", len(b), maxBatch)
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
	// The clock starts just before the queue passes half full (the writer
	// holds the first record): queueing the first half can itself take
	// longer than the linger under -race on a busy machine.
	var start time.Time
	for i := range queueCap/2 + 8 {
		if i == queueCap/2-8 {
			start = time.Now()
		}
		_ = a.Record(&store.AuditEvent{TraceID: fmt.Sprint(i)})
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
	if first >= linger {
		t.Errorf("first write after %s with the queue half full, want it before the %s linger ends", first, linger)
	}
}

// blockedStore holds every write until release is closed; entered gets a
// value each time a write starts.
type blockedStore struct {
	batchStore
	entered chan struct{}
	release chan struct{}
}

func (s *blockedStore) AppendAudits(ctx context.Context, es []*store.AuditEvent) error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return s.batchStore.AppendAudits(ctx, es)
}

func (s *blockedStore) AppendAudit(ctx context.Context, e *store.AuditEvent) error {
	return s.AppendAudits(ctx, []*store.AuditEvent{e})
}

// TestAuditorFullQueueRefusesAfterABoundedWait: with the writer stuck and
// the queue full, Record and Commit wait the bounded time, then fail with
// ErrBusy (which the chain turns into a retryable error), the refused
// record is counted, and nothing queued before is lost.
func TestAuditorFullQueueRefusesAfterABoundedWait(t *testing.T) {
	st := &blockedStore{entered: make(chan struct{}, 1), release: make(chan struct{})}
	const wait = 30 * time.Millisecond
	a := running(t, New(st, slog.New(slog.NewTextHandler(io.Discard, nil)), WithQueueWait(wait)))
	first := make(chan error, 1)
	go func() { first <- a.Commit(&store.AuditEvent{TraceID: "first"}) }()
	<-st.entered // the writer holds "first" and is stuck in its write
	for i := range queueCap {
		if err := a.Record(&store.AuditEvent{TraceID: fmt.Sprint(i)}); err != nil {
			t.Fatalf("record %d refused with room in the queue: %v", i, err)
		}
	}
	start := time.Now()
	if err := a.Record(&store.AuditEvent{TraceID: "over"}); !errors.Is(err, ErrBusy) {
		t.Fatalf("Record on a full queue = %v, want ErrBusy", err)
	}
	if el := time.Since(start); el < wait {
		t.Errorf("Record gave up after %s, want it to wait %s for room", el, wait)
	}
	if err := a.Commit(&store.AuditEvent{TraceID: "over too"}); !errors.Is(err, ErrBusy) {
		t.Fatalf("Commit on a full queue = %v, want ErrBusy", err)
	}
	if got := testutil.ToFloat64(a.metrics.dropped); got != 1 {
		t.Errorf("toolsvc_audit_dropped_total = %v, want the 1 refused Record", got)
	}
	close(st.release)
	if err := <-first; err != nil {
		t.Fatalf("Commit of the first record: %v", err)
	}
	a.Close()
	if n, _ := st.written(); n != queueCap+1 {
		t.Errorf("%d records written, want all %d queued before the queue filled", n, queueCap+1)
	}
}

// TestAuditorCommitWritesAtOnceAndGroups: a record a caller waits for is
// written without the linger, and callers that wait together share a few
// writes (group commit) rather than one each.
func TestAuditorCommitWritesAtOnceAndGroups(t *testing.T) {
	st := &slowStore{delay: 10 * time.Millisecond}
	a := running(t, New(st, slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(a.Close)
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint(i)
			if err := a.Commit(&store.AuditEvent{TraceID: id}); err != nil {
				t.Error(err)
				return
			}
			if !st.has(id) {
				t.Errorf("Commit of %s returned before its record was written", id)
			}
		}()
	}
	wg.Wait()
	got, writes := st.written()
	if got != n {
		t.Fatalf("%d of %d records written", got, n)
	}
	if writes > n/4 {
		t.Errorf("%d concurrent commits took %d writes, want them grouped", n, writes)
	}
	t.Logf("%d commits in %d writes", n, writes)
}

// slowStore is a batchStore whose writes take delay.
type slowStore struct {
	batchStore
	delay time.Duration
}

func (s *slowStore) AppendAudits(ctx context.Context, es []*store.AuditEvent) error {
	time.Sleep(s.delay)
	return s.batchStore.AppendAudits(ctx, es)
}

func (s *slowStore) AppendAudit(ctx context.Context, e *store.AuditEvent) error {
	return s.AppendAudits(ctx, []*store.AuditEvent{e})
}

func (s *batchStore) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.batches {
		for _, x := range b {
			if x == id {
				return true
			}
		}
	}
	return false
}

// TestNewStartsNothingAndCloseWrites: New starts no goroutine; without Run,
// Close writes what was queued.
func TestNewStartsNothingAndCloseWrites(t *testing.T) {
	st := &batchStore{}
	a := New(st, nil)
	for i := range 3 {
		if err := a.Record(&store.AuditEvent{TraceID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := st.written(); n != 0 {
		t.Fatalf("%d records written before Run or Close", n)
	}
	a.Close()
	if n, _ := st.written(); n != 3 {
		t.Fatalf("Close wrote %d records, want 3", n)
	}
	a.Run(context.Background()) // after Close: returns at once
}

// TestRunWritesWhatIsQueuedWhenItsContextEnds: Run returns once its
// context ends, having written what was queued; Close writes what came
// after.
func TestRunWritesWhatIsQueuedWhenItsContextEnds(t *testing.T) {
	st := &batchStore{}
	a := New(st, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	if err := a.Record(&store.AuditEvent{TraceID: "before"}); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if !st.has("before") {
		t.Fatal("Run returned without writing the queued record")
	}
	if err := a.Record(&store.AuditEvent{TraceID: "after"}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if !st.has("after") {
		t.Fatal("Close did not write the record queued after Run")
	}
}
