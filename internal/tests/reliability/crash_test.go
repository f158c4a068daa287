package reliability

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // integrity_check of the SQLite file after the crashes

	"github.com/toolsvc/toolsvc/internal/store/backends"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// crashRounds is 2 in `go test` and 8 with TOOLSVC_CRASHTEST=1.
func crashRounds() int {
	if os.Getenv("TOOLSVC_CRASHTEST") != "" {
		return 8
	}
	return 2
}

// ackedWrite is a memory whose add-memory a client saw succeed.
type ackedWrite struct {
	id, word string
}

// TestNoAcknowledgedWriteLost SIGKILLs `toolsvc serve` at random moments
// while four clients add memories and one syncs knowledge, restarts it on
// the same store each round, and then checks that every acknowledged write
// is there, findable by search, and that the counts add up.
func TestNoAcknowledgedWriteLost(t *testing.T) {
	for _, backend := range []string{testserver.SQLite, testserver.Postgres} {
		t.Run(backend, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "crash.db")
			if backend == testserver.Postgres {
				db = testserver.PostgresDSN(t)
			}
			pc := newProcConfig(t, "--db", db)
			var (
				acked     []ackedWrite
				attempted int
			)
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 42))
			for round := range crashRounds() {
				p := pc.start(t)
				a, n := writeUntil(t, p, round, time.Duration(300+rng.IntN(1200))*time.Millisecond, (*process).kill)
				acked, attempted = append(acked, a...), attempted+n
				t.Logf("round %d: %d writes acknowledged of %d attempted before SIGKILL", round, len(a), n)
			}
			if len(acked) == 0 {
				t.Fatal("no write was acknowledged: the clients never reached the server")
			}
			p := pc.start(t)
			conn := p.dial(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for i, w := range acked {
				if i%max(1, len(acked)/25) != 0 {
					continue // search a sample; every id is checked in the store below
				}
				o, err := grpcCall(ctx, conn, "", "search-memories", map[string]any{"query": w.word, "threshold": 0}, nil)
				if err != nil || o.Code != "OK" {
					t.Fatalf("search after restart: %v %+v", err, o)
				}
				if !strings.Contains(fmt.Sprint(o.Result), w.id) {
					t.Errorf("search for %q does not find acknowledged memory %s", w.word, w.id)
				}
			}
			if o, err := grpcCall(ctx, conn, "", "get-sync-status", map[string]any{}, nil); err != nil || o.Code != "OK" {
				t.Fatalf("get-sync-status after the crashes: %v %+v", err, o)
			}
			if err := p.terminate(t, 20*time.Second); err != nil {
				t.Fatalf("clean shutdown after the crashes: %v\n%s", err, p.Logs.String())
			}
			verifyStore(t, db, backend, acked, attempted)
		})
	}
}

// TestGracefulShutdownUnderLoad sends SIGTERM while clients write: the
// process exits cleanly within the grace period, and every write a client
// saw acknowledged is in the store.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	db := filepath.Join(t.TempDir(), "graceful.db")
	pc := newProcConfig(t, "--db", db, "--shutdown-grace", "5s")
	p := pc.start(t)
	var exitErr error
	acked, attempted := writeUntil(t, p, 0, time.Second, func(p *process) { exitErr = p.terminate(t, 15*time.Second) })
	if exitErr != nil {
		t.Fatalf("SIGTERM under load: %v\n%s", exitErr, p.Logs.String())
	}
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged before SIGTERM")
	}
	verifyStore(t, db, testserver.SQLite, acked, attempted)
}

// writeUntil runs the clients against p, stops p with stop after
// stopAfter, and returns the acknowledged writes and the number attempted.
func writeUntil(t *testing.T, p *process, round int, stopAfter time.Duration, stop func(*process)) ([]ackedWrite, int) {
	t.Helper()
	conn := p.dial(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu        sync.Mutex
		acked     []ackedWrite
		attempted int
		wg        sync.WaitGroup
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ctx.Err() == nil && seq < 10000; seq++ {
				word := randomWord()
				content := fmt.Sprintf("crash round %d writer %d sequence %d remembers %s", round, w, seq, word)
				mu.Lock()
				attempted++
				mu.Unlock()
				cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
				o, err := grpcCall(cctx, conn, "", "add-memory", map[string]any{"content": content}, nil)
				ccancel()
				if err == nil && o.Code == "OK" {
					id, _ := o.Result["data"].(map[string]any)["memoryId"].(string)
					mu.Lock()
					acked = append(acked, ackedWrite{id: id, word: word})
					mu.Unlock()
				}
				time.Sleep(10 * time.Millisecond) // stay under add-memory's 600/min limit per round
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil && i < 1000; i++ {
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			_, _ = grpcCall(cctx, conn, "", "sync-knowledge", map[string]any{"force": true}, nil)
			ccancel()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	time.Sleep(stopAfter)
	stop(p)
	cancel()
	wg.Wait()
	return acked, attempted
}

// verifyStore opens the store directly and checks every acknowledged id,
// the counts and, on SQLite, the file's integrity.
func verifyStore(t *testing.T, db, backend string, acked []ackedWrite, attempted int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := backends.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, w := range acked {
		if _, err := st.GetMemory(ctx, devTenant, w.id); err != nil {
			t.Errorf("acknowledged memory %s lost: %v", w.id, err)
		}
	}
	total, err := st.CountMemories(ctx, devTenant)
	if err != nil {
		t.Fatal(err)
	}
	pointers, err := st.ListPointers(ctx, devTenant)
	if err != nil {
		t.Fatal(err)
	}
	plain := total - len(pointers)
	// Writes cut off by the kill may or may not have committed; acknowledged
	// ones must have, and nothing may appear that no client sent.
	if plain < len(acked) || plain > attempted {
		t.Errorf("memories = %d (+%d pointers): want between %d acknowledged and %d attempted", plain, len(pointers), len(acked), attempted)
	}
	seen := map[string]bool{}
	for _, p := range pointers {
		if seen[p.KnowledgeItemID] {
			t.Errorf("knowledge item %s has two pointers after the crashes", p.KnowledgeItemID)
		}
		seen[p.KnowledgeItemID] = true
	}
	t.Logf("%s: %d acknowledged, %d attempted, %d stored, %d pointers", backend, len(acked), attempted, plain, len(pointers))
	if backend == testserver.SQLite {
		sqliteIntegrity(t, db)
	}
}

// sqliteIntegrity runs PRAGMA integrity_check on the database file.
func sqliteIntegrity(t *testing.T, path string) {
	t.Helper()
	d, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var res string
	if err := d.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil {
		t.Fatal(err)
	}
	if res != "ok" {
		t.Fatalf("SQLite integrity_check: %s", res)
	}
}

// randomWord is 14 random lowercase letters: a search term no other memory
// contains.
func randomWord() string {
	b := make([]byte, 14)
	for i := range b {
		b[i] = byte('a' + rand.IntN(26))
	}
	return string(b)
}
