package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
	"github.com/toolsvc/toolsvc/internal/store/storetest"
)

func openAt(tb testing.TB, path string, opts ...store.Option) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(tb.Context(), path, opts...)
	if err != nil {
		tb.Fatalf("Open(%q): %v", path, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func openTemp(tb testing.TB) store.Store {
	tb.Helper()
	return openAt(tb, filepath.Join(tb.TempDir(), "store.db"))
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
}

func BenchmarkSearch(b *testing.B) { storetest.BenchmarkSearch(b, openTemp) }

func BenchmarkSearchCommonWords(b *testing.B) { storetest.BenchmarkSearchCommonWords(b, openTemp) }

func BenchmarkAddMemory(b *testing.B) { storetest.BenchmarkAddMemory(b, openTemp) }

func BenchmarkSaveResultPages(b *testing.B) { storetest.BenchmarkSaveResultPages(b, openTemp) }

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "store.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	m := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: "survives a reopen"}
	if err := s.AddMemory(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openAt(t, path)
	got, err := s2.GetMemory(t.Context(), "t1", m.ID)
	if err != nil || got.Content != m.Content {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
	res, err := s2.SearchMemories(t.Context(), store.SearchQuery{Tenant: "t1", Terms: []string{"reopen"},
		Scopes: []store.Scope{{Layer: store.LayerUser, ScopeID: "u1"}}})
	if err != nil || len(res.Candidates) != 1 {
		t.Fatalf("full-text index after reopen: %+v, %v", res, err)
	}
}

func TestMigrationsIdempotent(t *testing.T) {
	tests := []struct {
		name       string
		concurrent bool
	}{
		{name: "sequential"},
		{name: "concurrent", concurrent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "store.db")
			const opens = 4
			var wg sync.WaitGroup
			errs := make(chan error, opens)
			for range opens {
				open := func() {
					s, err := sqlite.Open(t.Context(), path)
					if err != nil {
						errs <- err
						return
					}
					errs <- s.Close()
				}
				if tc.concurrent {
					wg.Go(open)
				} else {
					open()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Errorf("Open: %v", err)
				}
			}
			db := rawDB(t, path)
			var versions, distinct int
			if err := db.QueryRow(`SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&versions, &distinct); err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob("migrations/*.sql")
			if versions != len(files) || distinct != versions {
				t.Errorf("schema_migrations has %d rows (%d distinct), want %d", versions, distinct, len(files))
			}
		})
	}
}

func rawDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// TestOpenRefusesANewerSchema opens a database a later toolsvc migrated
// (a migration version past this build's newest): Open fails and says
// so, instead of running on a schema it does not know.
func TestOpenRefusesANewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s := openAt(t, path)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rawDB(t, path).Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_later.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(t.Context(), path)
	if err == nil || !strings.Contains(err.Error(), "schema migration 9999, which needs a toolsvc that knows migration 9999") {
		t.Fatalf("Open of a newer schema: %v, want the newer-schema error", err)
	}
}

// TestTwoReleasesShareOneDatabase: releases N and N+1 side by side on one
// SQLite file while N+1 only expands the schema; N refuses N+2's
// contraction (storetest.SchemaWindow).
func TestTwoReleasesShareOneDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	storetest.SchemaWindow(t, func(t *testing.T, later []backend.Migration) (store.Store, error) {
		return sqlite.OpenLater(t.Context(), path, later)
	}, sqlite.NewestMigration(),
		"CREATE TABLE later_notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);\nALTER TABLE audit_events ADD COLUMN later_note TEXT;",
		"DROP TABLE later_notes;")
}

func TestAuditIsAppendOnlyInTheDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s := openAt(t, path)
	if err := s.AppendAudit(t.Context(), &store.AuditEvent{Tenant: "t1", Tool: "x", Decision: store.DecisionAllow}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	for _, stmt := range []string{`UPDATE audit_events SET decision = 'deny'`, `DELETE FROM audit_events`} {
		if _, err := db.Exec(stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want append-only refusal", stmt, err)
		}
	}
}

// TestAuditRetentionInTheDatabase: pruning raises a cutoff that only moves
// forward, and a DELETE of an event newer than it is still refused.
func TestAuditRetentionInTheDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s := openAt(t, path)
	old, recent := time.Now().Add(-48*time.Hour), time.Now()
	for _, at := range []time.Time{old, recent} {
		if err := s.AppendAudit(t.Context(), &store.AuditEvent{At: at, Tenant: "t1", Tool: "x", Decision: store.DecisionAllow}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.PruneAudit(t.Context(), time.Now().Add(-24*time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("PruneAudit = %d, %v; want the old event deleted", n, err)
	}
	db := rawDB(t, path)
	for _, stmt := range []string{`DELETE FROM audit_events`, `UPDATE audit_retention SET cutoff = 0`, `DELETE FROM audit_retention`} {
		if _, err := db.Exec(stmt); err == nil {
			t.Errorf("%s: accepted, want a refusal", stmt)
		}
	}
}

func TestOpenRejects(t *testing.T) {
	tests := []struct {
		name string
		path string
	}{
		{name: "empty", path: ""},
		{name: "memory", path: ":memory:"},
		{name: "query string", path: filepath.Join(t.TempDir(), "x.db?mode=ro")},
		{name: "directory", path: t.TempDir()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := sqlite.Open(t.Context(), tc.path); err == nil {
				_ = s.Close()
				t.Errorf("Open(%q) succeeded", tc.path)
			}
		})
	}
}

// crashEnv names the database the crash helper process writes to.
const crashEnv = "TOOLSVC_SQLITE_CRASH_DB"

// TestCrashHelper is not a test: TestAcknowledgedWritesSurviveSIGKILL runs
// the test binary again with crashEnv set, and this function then writes
// memories forever, printing each ID once AddMemory has returned.
func TestCrashHelper(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("helper process for TestAcknowledgedWritesSurviveSIGKILL")
	}
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		m := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: fmt.Sprint("write ", i)}
		if err := s.AddMemory(t.Context(), m); err != nil {
			fmt.Println("add error:", err)
			os.Exit(2)
		}
		fmt.Println("ACK", m.ID)
	}
}

func TestAcknowledgedWritesSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	path := filepath.Join(t.TempDir(), "store.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(20 * time.Second)
	for sc.Scan() && len(acked) < 200 && time.Now().Before(deadline) {
		if id, ok := strings.CutPrefix(sc.Text(), "ACK "); ok {
			acked = append(acked, id)
		}
	}
	// Kill mid-stream: the helper is still writing.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(acked) < 20 {
		t.Fatalf("helper acknowledged only %d writes before the kill", len(acked))
	}

	s := openAt(t, path)
	for _, id := range acked {
		if _, err := s.GetMemory(t.Context(), "t1", id); err != nil {
			t.Errorf("acknowledged memory %s lost after SIGKILL: %v", id, err)
		}
	}
}

// walFrames is the length of path's WAL in frames: mxFrame of the WAL
// index header at the start of the -shm file (native byte order).
func walFrames(tb testing.TB, path string) int { return walIndex(tb, path, 16) }

// walCopied is how many of those frames a checkpoint has copied back:
// nBackfill, the first field of the checkpoint info after the header's
// two copies.
func walCopied(tb testing.TB, path string) int { return walIndex(tb, path, 96) }

func walIndex(tb testing.TB, path string, offset int64) int {
	tb.Helper()
	f, err := os.Open(path + "-shm")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	v := make([]byte, 4)
	if _, err := f.ReadAt(v, offset); err != nil {
		tb.Fatal(err)
	}
	return int(binary.NativeEndian.Uint32(v))
}

// TestWALStaysShortUnderConstantReads writes while readers never stop:
// SQLite alone does not start such a WAL over, so without the store's
// checkpointer the log only grows; with it, the log starts over once it
// passes the restart length, while the readers keep reading.
func TestWALStaysShortUnderConstantReads(t *testing.T) {
	const restart = 100
	path := filepath.Join(t.TempDir(), "wal.db")
	s := openAt(t, path, store.WithWALRestartFrames(restart))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.SearchMemories(t.Context(), store.SearchQuery{Tenant: "t1", Terms: []string{"filler"},
					Scopes: []store.Scope{{Layer: store.LayerUser, ScopeID: "u1"}}, CandidateLimit: 5}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	filler := strings.Repeat("filler text for the write ahead log ", 60)
	peak, restarts, last := 0, 0, 0
	for i := 0; i < 400 || restarts == 0; i++ {
		if i == 4000 {
			t.Fatalf("the WAL never started over in %d writes with readers running (peak %d frames)", i, peak)
		}
		m := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: fmt.Sprint(filler, i)}
		if err := s.AddMemory(t.Context(), m); err != nil {
			t.Fatal(err)
		}
		n := walFrames(t, path)
		if n < last {
			restarts++
		}
		peak, last = max(peak, n), n
	}
	if peak < restart {
		t.Fatalf("the WAL peaked at %d frames, under the restart length %d: the test wrote too little", peak, restart)
	}
	t.Logf("%d restarts, peak %d frames", restarts, peak)
	// What is left is copied back too, and a later write starts the log
	// over: it comes back under the restart length.
	deadline := time.Now().Add(5 * time.Second)
	for walFrames(t, path) >= restart {
		if time.Now().After(deadline) {
			t.Fatalf("the WAL still holds %d frames 5 s after the writes", walFrames(t, path))
		}
		m := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: "one more"}
		if err := s.AddMemory(t.Context(), m); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// restartCounter is a log sink that counts the checkpointer's restarts
// (slog's text handler writes each record in one Write).
type restartCounter struct{ n atomic.Int32 }

func (c *restartCounter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("WAL restarted")) {
		c.n.Add(1)
	}
	return len(p), nil
}

// TestIdleWALIsRestartedOnce: a restarted WAL keeps its length until the
// next write, so the checkpointer must not restart it again every tick
// (it did, taking the write lock four times a second on an idle store).
func TestIdleWALIsRestartedOnce(t *testing.T) {
	var restarts restartCounter
	log := slog.New(slog.NewTextHandler(&restarts, &slog.HandlerOptions{Level: slog.LevelDebug}))
	path := filepath.Join(t.TempDir(), "idle.db")
	s, err := sqlite.Open(t.Context(), path, store.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	filler := strings.Repeat("filler text for the write ahead log ", 60)
	for i := 0; walFrames(t, path) < 2000; i++ {
		m := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: fmt.Sprint(filler, i)}
		if err := s.AddMemory(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // a restart of what was written
	before := restarts.n.Load()
	time.Sleep(time.Second) // four ticks with nothing written
	if after := restarts.n.Load(); before == 0 || after != before {
		t.Errorf("restarts: %d after the writes, %d a second later with nothing written; want at least one, then none", before, after)
	}
}

// TestScopeKeyMatchesTheGeneratedColumn checks that the scope token a
// search sends is the one migration 0002's column indexes, for plain and
// non-ASCII ids.
func TestScopeKeyMatchesTheGeneratedColumn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.db")
	s := openAt(t, path)
	for _, sc := range []store.Scope{{Layer: store.LayerUser, ScopeID: "u1"}, {Layer: store.LayerProject, ScopeID: "Ünïcode-Ø 項目"}} {
		m := &store.Memory{Tenant: "acme corp", Layer: sc.Layer, ScopeID: sc.ScopeID, Content: "anything"}
		if err := s.AddMemory(t.Context(), m); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = db.QueryRow(`SELECT scope_key FROM memories WHERE tenant = ? AND id = ?`, m.Tenant, m.ID).Scan(&got)
		_ = db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := sqlite.ScopeKey("acme corp", sc); got != want {
			t.Errorf("scope %v: column %q, search token %q", sc, got, want)
		}
	}
}

// TestCloseTwice: Close may run twice (a failed start-up closes what it
// opened, and so may its caller); the second is a no-op, a closed store
// refuses work with an error instead of reaching the file, and what was
// written before Close is there when the file is opened again.
func TestCloseTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "twice.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	m := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: "written before close"}
	if err := s.AddMemory(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Error("Ping on a closed store succeeded")
	}
	if err := s.AddMemory(t.Context(), &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: "after close"}); err == nil {
		t.Error("AddMemory on a closed store succeeded")
	}
	again, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("reopen after a double close: %v", err)
	}
	defer again.Close()
	got, err := again.GetMemory(t.Context(), "t1", m.ID)
	if err != nil || got.Content != m.Content {
		t.Errorf("after reopening: %q, %v; want the memory written before close", got.Content, err)
	}
}

// TestSearchNeverWaitsForItsOwnConnection: a text search prepares its
// statements before its read transaction takes a connection. With a single
// reader connection, preparing inside the transaction waited for the
// connection the transaction held, forever; with more, every reader could be
// held that way at once (TestOverloadIsShed and the soak saw the hang).
// Each search here has a statement text not seen before (another number of
// tags), so each one prepares.
func TestSearchNeverWaitsForItsOwnConnection(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "one.db"), store.WithMaxConns(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tags := []string{"a", "b", "c", "d"}
	if err := s.AddMemory(t.Context(), &store.Memory{Tenant: "t", Layer: store.LayerUser, ScopeID: "u",
		Content: "invoices live in PostgreSQL", Tags: tags}); err != nil {
		t.Fatal(err)
	}
	for n := range len(tags) + 1 {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		res, err := s.SearchMemories(ctx, store.SearchQuery{Tenant: "t", Terms: []string{"invoices"}, Tags: tags[:n],
			Scopes: []store.Scope{{Layer: store.LayerUser, ScopeID: "u"}}})
		cancel()
		if err != nil {
			t.Fatalf("search with %d tags: %v", n, err)
		}
		if len(res.Candidates) != 1 {
			t.Fatalf("search with %d tags: %d candidates, want 1", n, len(res.Candidates))
		}
	}
}

// BenchmarkSearchWALLength measures a search of the soak's kind (the whole
// 1,000-match window of the caller's scope) over a short WAL and over
// 10,000 and 40,000 frames written while a reader held an older snapshot,
// as some reader of a busy service always does, so that the checkpoint
// could not copy them back; then over the same 40,000 frames once copied
// back but not yet started over.
func BenchmarkSearchWALLength(b *testing.B) {
	const users, per = 20, store.MatchedCap
	path := filepath.Join(b.TempDir(), "wal.db")
	s, err := sqlite.Open(b.Context(), path, store.WithWALRestartFrames(-1))
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	word := func() string { return fmt.Sprintf("%c%c%cword", 'a'+r.IntN(26), 'a'+r.IntN(26), 'a'+r.IntN(26)) }
	content := func(i int) string { return fmt.Sprintf("load test memory %d about %s", i, word()) }
	var batch []*store.Memory
	for i := range users * per {
		batch = append(batch, &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: fmt.Sprint("u", i%users), Content: content(i)})
		if len(batch) == 5000 {
			if err := s.AddMemories(b.Context(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	// Closing the last connection checkpoints the WAL and removes it.
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	s = openAt(b, path)
	pin, err := sql.Open("sqlite", path+"?_pragma=query_only(1)")
	if err != nil {
		b.Fatal(err)
	}
	defer pin.Close()
	snapshot, err := pin.BeginTx(b.Context(), nil)
	if err != nil {
		b.Fatal(err)
	}
	var n int
	if err := snapshot.QueryRow(`SELECT count(*) FROM memories WHERE seq < 10`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	search := func(b *testing.B) {
		for b.Loop() {
			res, err := s.SearchMemories(b.Context(), store.SearchQuery{Tenant: "t1", Terms: []string{"load", "test", "memory", word()[:3]},
				Scopes: []store.Scope{{Layer: store.LayerUser, ScopeID: fmt.Sprint("u", r.IntN(users))}}, CandidateLimit: 10})
			if err != nil || res.Matched != store.MatchedCap {
				b.Fatalf("search: %d matched, %v", res.Matched, err)
			}
		}
		b.ReportMetric(float64(walFrames(b, path)), "frames")
		b.ReportMetric(float64(walCopied(b, path)), "copied")
	}
	i := users * per
	for _, frames := range []int{0, 10_000, 40_000} {
		for walFrames(b, path) < frames {
			m := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: fmt.Sprint("u", i%users), Content: content(i)}
			if err := s.AddMemory(b.Context(), m); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.Run(fmt.Sprintf("frames=%d", frames), search)
	}
	if err := snapshot.Rollback(); err != nil {
		b.Fatal(err)
	}
	// The checkpointer's next passive checkpoint copies everything back.
	time.Sleep(2 * time.Second)
	b.Run("frames=40000/copied-back", search)
}
