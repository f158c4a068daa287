package storetest

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

func testSyncRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	st, err := s.SyncStats(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st, store.SyncStats{}) {
		t.Errorf("SyncStats before any run = %+v, want zero", st)
	}

	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	runs := []*store.SyncRun{
		{Tenant: "t1", StartedAt: t0, DurationMs: 100, Added: 5, Unchanged: 1},
		{Tenant: "t1", StartedAt: t0.Add(time.Hour), DurationMs: 200, Updated: 2, Deleted: 1, Failures: 1, Forced: true,
			FailedItems: []store.SyncFailure{{ItemID: "adr-9", Path: "adr/9.md", Reason: "bad front matter"}}},
		// Recorded last but started earliest: LastRun goes by StartedAt.
		{Tenant: "t1", StartedAt: t0.Add(-time.Hour), DurationMs: 600, Added: 1, Updated: 1},
	}
	for _, r := range runs {
		if err := s.RecordSyncRun(ctx, r); err != nil {
			t.Fatalf("RecordSyncRun: %v", err)
		}
		if r.ID <= 0 {
			t.Errorf("RecordSyncRun left ID %d", r.ID)
		}
	}
	if runs[0].ID == runs[1].ID || runs[1].ID == runs[2].ID {
		t.Errorf("run IDs not distinct: %d %d %d", runs[0].ID, runs[1].ID, runs[2].ID)
	}
	st, err = s.SyncStats(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if st.TotalSyncs != 3 || st.TotalItemsSynced != 5+2+2 || st.AvgDurationMs != 300 {
		t.Errorf("SyncStats = %+v, want 3 syncs, 9 items, 300ms average", st)
	}
	if st.LastRun == nil || !reflect.DeepEqual(*st.LastRun, *runs[1]) {
		t.Errorf("LastRun =\n%+v\nwant\n%+v", st.LastRun, runs[1])
	}

	before := time.Now()
	now := &store.SyncRun{Tenant: "t1"}
	if err := s.RecordSyncRun(ctx, now); err != nil {
		t.Fatal(err)
	}
	within(t, "defaulted StartedAt", now.StartedAt, before, time.Now())
	if now.FailedItems == nil {
		t.Errorf("FailedItems left nil")
	}

	wantInvalid(t, s.RecordSyncRun(ctx, &store.SyncRun{Tenant: "t1", Added: -1}), "SyncRun")
	wantInvalid(t, s.RecordSyncRun(ctx, &store.SyncRun{}), "Tenant")
}

func testItemVersions(t *testing.T, s store.Store) {
	ctx := t.Context()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	appendV := func(item, change string, at time.Time) *store.ItemVersion {
		t.Helper()
		v := &store.ItemVersion{Tenant: "t1", ItemID: item, Change: change, Hash: "h-" + change,
			Author: "alice", Message: "commit " + change, At: at}
		if err := s.AppendItemVersion(ctx, v); err != nil {
			t.Fatalf("AppendItemVersion: %v", err)
		}
		return v
	}
	x1 := appendV("adr-x", store.ChangeAdded, t0)
	y1 := appendV("adr-y", store.ChangeAdded, t0)
	x2 := appendV("adr-x", store.ChangeUpdated, t0.Add(time.Minute))
	x3 := appendV("adr-x", store.ChangeRemoved, t0.Add(2*time.Minute))
	for _, c := range []struct {
		v    *store.ItemVersion
		want int
	}{{x1, 1}, {y1, 1}, {x2, 2}, {x3, 3}} {
		if c.v.Version != c.want {
			t.Errorf("%s %s: Version %d, want %d", c.v.ItemID, c.v.Change, c.v.Version, c.want)
		}
	}
	hist, err := s.ItemHistory(ctx, "t1", "adr-x")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.ItemVersion{*x1, *x2, *x3}
	if !reflect.DeepEqual(hist, want) {
		t.Errorf("ItemHistory =\n%+v\nwant oldest first\n%+v", hist, want)
	}
	if hist, err := s.ItemHistory(ctx, "t1", "unknown"); err != nil || hist == nil || len(hist) != 0 {
		t.Errorf("ItemHistory(unknown) = %#v, %v; want empty", hist, err)
	}
	wantInvalid(t, s.AppendItemVersion(ctx, &store.ItemVersion{Tenant: "t1", ItemID: "a", Change: "renamed"}), "Change")
	wantInvalid(t, s.AppendItemVersion(ctx, &store.ItemVersion{Tenant: "t1", Change: store.ChangeAdded}), "ItemID")
}

func testConcurrentItemVersions(t *testing.T, s store.Store) {
	const workers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				v := &store.ItemVersion{Tenant: "t1", ItemID: "hot", Change: store.ChangeUpdated, Message: fmt.Sprint(w, i)}
				if err := s.AppendItemVersion(t.Context(), v); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent AppendItemVersion: %v", err)
	}
	hist, err := s.ItemHistory(t.Context(), "t1", "hot")
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != workers*each {
		t.Fatalf("%d versions, want %d", len(hist), workers*each)
	}
	for i, v := range hist {
		if v.Version != i+1 {
			t.Fatalf("version at %d is %d: numbering not gapless", i, v.Version)
		}
	}
}
