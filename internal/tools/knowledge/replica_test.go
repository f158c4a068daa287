package knowledge_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

// chanNudge is a Nudge within one process, as Redis pub/sub is between
// processes.
type chanNudge struct {
	ch   chan struct{}
	sent atomic.Int32
}

func (n *chanNudge) Notify(context.Context, int64) error {
	n.sent.Add(1)
	select {
	case n.ch <- struct{}{}:
	default:
	}
	return nil
}

func (n *chanNudge) Listen(ctx context.Context, heard func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.ch:
			heard()
		}
	}
}

func writeItem(t *testing.T, dir, name, id string) {
	t.Helper()
	body := "---\nid: " + id + "\ntype: policy\nlayer: company\ntitle: T " + id + "\nstatus: accepted\n---\nbody\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSharedVersionOnSQLite: two replicas of one SQLite store (as two
// processes on one file) and one directory. A reload on one publishes the
// set's version; the other, nudged, reloads; a reload of unchanged
// content publishes nothing new; a reload that fails keeps the last good
// set and says so in State, and the next good one clears it.
func TestSharedVersionOnSQLite(t *testing.T) {
	dir := t.TempDir()
	writeItem(t, dir, "a.md", "pol-a")
	st := teststore.SQLite(t)
	versions := st.(store.KnowledgeVersionStore)
	opts := kb.LibraryOptions{Tenants: []string{"t1"}}
	a, err := knowledge.OpenDir(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := knowledge.OpenDir(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	nudge := &chanNudge{ch: make(chan struct{}, 1)}
	ctx := t.Context()
	if err := a.Share(ctx, versions, nudge, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Share(ctx, versions, nudge, nil); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); b.Watch(wctx, time.Hour) }()
	t.Cleanup(func() { cancel(); <-done })

	writeItem(t, dir, "b.md", "pol-b")
	if _, _, err := a.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if v := a.State().Version; v != 1 {
		t.Fatalf("A's version after its reload = %d, want 1", v)
	}
	waitUntil(t, "B follows A's set", func() bool { return b.Library().For("t1").Len() == 2 })
	if sa, sb := a.State(), b.State(); sb.Version != 1 || sb.Digest != sa.Digest || sb.LoadedAt.IsZero() {
		t.Errorf("B's state %+v, want version 1 with A's digest %s", sb, sa.Digest)
	}
	if _, _, err := a.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := versions.KnowledgeVersion(ctx); v.Version != 1 {
		t.Errorf("a reload of unchanged content moved the version to %d", v.Version)
	}

	// B's watcher has shown that B follows A. It stops here, so that only
	// the refreshes below reload B: a refresh of its own (a nudge, or its
	// first look when its goroutine started late) could otherwise load
	// version 2 between the steps, and the refresh that must reload would
	// find nothing new (a fresh-clone CI run failed so, on a busy machine).
	cancel()
	<-done

	// The directory goes away under B: its reload fails, it keeps serving.
	moved := dir + ".moved"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := versions.PublishKnowledge(ctx, "another replica's set"); err != nil {
		t.Fatal(err)
	}
	if reloaded, err := b.Refresh(ctx); err == nil || reloaded {
		t.Fatalf("B's refresh without its directory: reloaded %v, err %v; want a failure", reloaded, err)
	}
	if s := b.State(); s.ReloadError == "" || s.Version != 1 || b.Library().For("t1").Len() != 2 {
		t.Errorf("after a failed reload B's state is %+v with %d items; want the error, version 1 and the last good set",
			s, b.Library().For("t1").Len())
	}
	if err := os.Rename(moved, dir); err != nil {
		t.Fatal(err)
	}
	if reloaded, err := b.Refresh(ctx); err != nil || !reloaded {
		t.Fatalf("B's refresh with its directory back: reloaded %v, err %v", reloaded, err)
	}
	if s := b.State(); s.ReloadError != "" || s.Version != 2 {
		t.Errorf("after a good reload B's state is %+v, want version 2 and no error", s)
	}
}

// TestPinKeepsTheSetOfTheKey: a call pinned before a reload answers from
// the pinned set, whose digest is the one the result cache keys it by; an
// unpinned call answers from the current set.
func TestPinKeepsTheSetOfTheKey(t *testing.T) {
	dir := t.TempDir()
	writeItem(t, dir, "a.md", "pol-a")
	d, err := knowledge.OpenDir(dir, kb.LibraryOptions{Tenants: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	caller := scope.WithCaller(t.Context(), scope.Caller{Tenant: "t1"})
	pinnedCtx, before := d.Pin(caller, "t1")
	writeItem(t, dir, "b.md", "pol-b")
	if _, _, err := d.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, after := d.Pin(caller, "t1")
	if before == after || after != d.Library().For("t1").Digest() {
		t.Fatalf("digest before the reload %s, after %s; want them to differ, the latter current", before, after)
	}
	svc := knowledge.New(d, teststore.SQLite(t))
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want uint32
	}{{"pinned before the reload", pinnedCtx, 1}, {"unpinned", caller, 2}} {
		resp, err := svc.QueryKnowledge(tc.ctx, &knowledgev1.QueryKnowledgeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetData().GetTotalCount(); got != tc.want {
			t.Errorf("%s: %d items, want %d", tc.name, got, tc.want)
		}
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
