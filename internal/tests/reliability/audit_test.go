package reliability

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/backends"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// answeredWrite is an add-memory a client saw succeed, by the correlation
// id it sent.
type answeredWrite struct {
	corr, id string
}

// TestNoAnsweredWriteUnaudited is a measurement made a test: 8
// clients over 64 principals call add-memory on a real `toolsvc serve`,
// which is SIGKILLed after 4 s and restarted; every write that was
// answered with success must have its audit record (and its memory).
// Before add-memory waited for its record, 12 to 68 of about 4,000 had
// none in 6 of 7 runs on SQLite.
func TestNoAnsweredWriteUnaudited(t *testing.T) {
	for _, backend := range []string{testserver.SQLite, testserver.Postgres} {
		t.Run(backend, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "audit-crash.db")
			if backend == testserver.Postgres {
				db = testserver.PostgresDSN(t)
			}
			authFile, tokens := writeAuthFile(t, 64)
			pc := newProcConfig(t, "--db", db, "--auth-file", authFile)
			answered, attempted := writeAndKill(t, pc.start(t), tokens, 4*time.Second)
			if len(answered) == 0 {
				t.Fatal("no write was answered before SIGKILL")
			}
			// Restart on the same store: recovery must not need anything
			// the killed process would have done; then stop it cleanly and
			// read the store directly.
			p := pc.start(t)
			if err := p.terminate(t, 20*time.Second); err != nil {
				t.Fatalf("clean shutdown after the restart: %v\n%s", err, p.Logs.String())
			}
			audited, records := auditedWrites(t, db)
			missing := 0
			for _, w := range answered {
				if !audited[w.corr] {
					missing++
					if missing <= 5 {
						t.Errorf("add-memory %s (memory %s) was answered but has no audit record", w.corr, w.id)
					}
				}
			}
			t.Logf("%s: %d add-memory answered of %d attempted before SIGKILL, %d audit records, %d answered without a record",
				backend, len(answered), attempted, records, missing)
		})
	}
}

// writeAndKill runs 8 clients of add-memory against p, rotating over
// tokens, SIGKILLs p after d and returns the answered writes and the
// number attempted.
func writeAndKill(t *testing.T, p *process, tokens []string, d time.Duration) ([]answeredWrite, int) {
	t.Helper()
	conn := p.dial(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu        sync.Mutex
		answered  []answeredWrite
		attempted int
		wg        sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ctx.Err() == nil; seq++ {
				corr := fmt.Sprintf("kill-%d-%d", w, seq)
				token := tokens[(w+8*seq)%len(tokens)]
				mu.Lock()
				attempted++
				mu.Unlock()
				cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
				o, err := grpcCall(cctx, conn, token, "add-memory", map[string]any{"content": "audited write " + corr},
					map[string]string{wire.HeaderCorrelationID: corr})
				ccancel()
				if err == nil && o.Code == "OK" {
					id, _ := o.Result["data"].(map[string]any)["memoryId"].(string)
					mu.Lock()
					answered = append(answered, answeredWrite{corr: corr, id: id})
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(d)
	p.kill()
	cancel()
	wg.Wait()
	return answered, attempted
}

// auditedWrites reads the audit trail of the soak tenant from the store at
// db and returns the correlation ids of its allowed add-memory records and
// the number of records.
func auditedWrites(t *testing.T, db string) (map[string]bool, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := backends.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	audited, records := map[string]bool{}, 0
	f := store.AuditFilter{Tenant: "soak", Tool: "add-memory", Limit: store.MaxAuditLimit}
	for {
		es, next, err := st.ListAudit(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			records++
			if e.Decision == store.DecisionAllow {
				audited[e.CorrelationID] = true
			}
		}
		if next == "" {
			return audited, records
		}
		f.Cursor = next
	}
}

// TestAuditStoreOutage cuts the link to the PostgreSQL that holds the
// audit trail (a proxy, never the shared server): under the default
// --audit-failure=closed calls are refused with a retryable error that
// says why, before they reach their tool, and once the link is back the
// same toolsvc serves again without a restart.
func TestAuditStoreOutage(t *testing.T) {
	dsn := testserver.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, u.Host)
	u.Host = px.Addr()
	s := testserver.New(t, testserver.Options{Configure: func(c *server.Config) {
		c.DB = u.String()
		c.Chain.Deadlines = interceptors.Deadlines{Fast: 2 * time.Second, Medium: 3 * time.Second, Slow: 5 * time.Second}
	}})
	add := func() outcome {
		o, _ := timedCall(t, s, "add-memory", map[string]any{"content": "audited " + randomWord()})
		return o
	}
	if o := add(); o.Code != "OK" {
		t.Fatalf("before the cut: %+v", o)
	}
	px.setCut(true)
	reason := func(o outcome) string {
		d, _ := o.Error["details"].(map[string]any)
		r, _ := d["reason"].(string)
		return r
	}
	waitFor(t, "calls refused for the audit trail's sake", func() bool {
		o := add()
		if o.Code == "OK" {
			t.Fatal("add-memory answered OK while its audit store was unreachable")
		}
		return reason(o) == "audit_unavailable"
	})
	for _, tool := range []string{"add-memory", "search-memories", "get-sync-status"} {
		args := map[string]any{"content": "refused " + randomWord()}
		if tool != "add-memory" {
			args = map[string]any{"query": "refused " + randomWord()}
			if tool == "get-sync-status" {
				args = map[string]any{}
			}
		}
		o, d := timedCall(t, s, tool, args)
		retryable, _ := o.Error["retryable"].(bool)
		if o.Code != "PROVIDER_ERROR" || !retryable || reason(o) != "audit_unavailable" {
			t.Errorf("%s while the audit store is down: %s retryable=%v reason=%q (%s); want a retryable PROVIDER_ERROR, reason audit_unavailable",
				tool, o.Code, retryable, reason(o), o.Message)
		}
		t.Logf("%s while cut: %s after %s: %s", tool, o.Code, d.Round(time.Millisecond), o.Message)
	}
	px.setCut(false)
	waitFor(t, "recovery once the audit store is back", func() bool { return add().Code == "OK" })
}

// TestAuditRetentionPrunes: with --audit-retention the running service
// prunes records older than it in the background, on both stores.
func TestAuditRetentionPrunes(t *testing.T) {
	for _, backend := range []string{testserver.SQLite, testserver.Postgres} {
		t.Run(backend, func(t *testing.T) {
			var dsn string
			if backend == testserver.Postgres {
				dsn = testserver.PostgresDSN(t)
			}
			const retention = 400 * time.Millisecond
			s := testserver.New(t, testserver.Options{Configure: func(c *server.Config) {
				if dsn != "" {
					c.DB = dsn
				}
				c.AuditRetention = retention
			}})
			records := func() int {
				es, _, err := s.Store().ListAudit(t.Context(), store.AuditFilter{Tenant: devTenant, Limit: store.MaxAuditLimit})
				if err != nil {
					t.Fatal(err)
				}
				return len(es)
			}
			if o, _ := timedCall(t, s, "add-memory", map[string]any{"content": "pruned later " + randomWord()}); o.Code != "OK" {
				t.Fatalf("add-memory: %+v", o)
			}
			if n := records(); n == 0 {
				t.Fatal("no audit record right after an answered add-memory")
			}
			waitFor(t, "the record to be pruned after the retention", func() bool { return records() == 0 })
		})
	}
}
