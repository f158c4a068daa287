package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// newADR is the ADR an operator adds while the replicas run.
const newADR = `---
id: adr-900-quasar-queues
type: adr
layer: company
title: Quasar queues for background jobs
summary: Background jobs go through quasar queues
status: accepted
tags: [quasar, jobs]
---
Background jobs are queued on quasar queues.
`

// replicaPair starts two replicas on one PostgreSQL schema, one Redis and
// one knowledge directory (a copy of the examples), each as configure
// says; it returns them, the directory and the tenant's API key.
func replicaPair(t *testing.T, configureB func(*server.Config)) (a, b REST, tenantDir, key string) {
	t.Helper()
	redisURL := os.Getenv("TOOLSVC_TEST_REDIS")
	if redisURL == "" {
		t.Skip("TOOLSVC_TEST_REDIS is not set; run the tests with `make test`, which sets it")
	}
	authFile, key := uniqueTenantKey(t)
	tenant := "t" + strings.TrimSuffix(strings.TrimPrefix(key, "tsk_"), "_shared")
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(testserver.KnowledgeDir(t))); err != nil {
		t.Fatal(err)
	}
	tenantDir = filepath.Join(dir, "tenants", tenant)
	if err := os.MkdirAll(filepath.Join(tenantDir, "adrs"), 0o755); err != nil {
		t.Fatal(err)
	}
	dsn := testserver.PostgresDSN(t)
	base := func(c *server.Config) {
		c.AuthFile, c.Redis, c.DB, c.KnowledgeDir, c.RedisTimeout = authFile, redisURL, dsn, dir, 5*time.Second
		// Polling too slow for the test: only the Redis nudge makes it.
		c.KnowledgeRefreshInterval = time.Minute
	}
	a = REST{S: testserver.New(t, testserver.Options{Configure: base})}
	b = REST{S: testserver.New(t, testserver.Options{Configure: func(c *server.Config) {
		base(c)
		if configureB != nil {
			configureB(c)
		}
	}})}
	return a, b, tenantDir, key
}

func callTool(t *testing.T, tr Transport, key, tool string, args map[string]any) Outcome {
	t.Helper()
	o, err := tr.Call(t.Context(), key, tool, args, nil)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return o
}

func itemsFound(o Outcome) int {
	d, _ := o.Result["data"].(map[string]any)
	items, _ := d["items"].([]any)
	return len(items)
}

// TestKnowledgeReachesEveryReplica is this scenario: two replicas on
// one PostgreSQL and one Redis serve one knowledge directory; an operator
// adds an ADR and runs sync-knowledge through replica A; replica B serves
// it within seconds (nudged through Redis: its store poll is a minute
// away), and B's query-knowledge, whose answer without the item is in the
// shared result cache, answers from its new set.
func TestKnowledgeReachesEveryReplica(t *testing.T) {
	a, b, tenantDir, key := replicaPair(t, nil)
	show := map[string]any{"id": "adr-900-quasar-queues"}
	query := map[string]any{"query": "quasar"}
	if o := callTool(t, b, key, "show-knowledge", show); o.Code != "NOT_FOUND" {
		t.Fatalf("B before the ADR exists: %s, want NOT_FOUND", o.Code)
	}
	if o := callTool(t, b, key, "query-knowledge", query); o.Code != "OK" || itemsFound(o) != 0 {
		t.Fatalf("B's query before the ADR exists: %s with %d items, want OK with none", o.Code, itemsFound(o))
	}

	if err := os.WriteFile(filepath.Join(tenantDir, "adrs", "adr-900-quasar-queues.md"), []byte(newADR), 0o644); err != nil {
		t.Fatal(err)
	}
	status := callTool(t, b, key, "get-sync-status", map[string]any{})
	pending, _ := status.Result["data"].(map[string]any)["pendingChanges"].(map[string]any)
	if pending["added"] != float64(1) {
		t.Errorf("get-sync-status pending changes = %v, want the one added file", pending)
	}
	if o := callTool(t, a, key, "sync-knowledge", map[string]any{}); o.Code != "OK" {
		t.Fatalf("sync-knowledge on A: %s %v", o.Code, o.Error)
	}
	if o := callTool(t, a, key, "show-knowledge", show); o.Code != "OK" {
		t.Fatalf("A after its sync: %s, want OK", o.Code)
	}
	start := time.Now()
	for callTool(t, b, key, "show-knowledge", show).Code != "OK" {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("B still lacks the ADR %s after A's sync", time.Since(start))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("B serves the new ADR %s after A's sync", time.Since(start).Round(time.Millisecond))
	if o := callTool(t, b, key, "query-knowledge", query); o.Code != "OK" || itemsFound(o) != 1 {
		t.Errorf("B's query after its reload: %s with %d items, want the new ADR (not the cached answer of its old set)", o.Code, itemsFound(o))
	}
	status = callTool(t, b, key, "get-sync-status", map[string]any{})
	data, _ := status.Result["data"].(map[string]any)
	set, _ := data["knowledgeSet"].(map[string]any)
	pending, _ = data["pendingChanges"].(map[string]any)
	if set["version"] != "1" || set["digest"] == "" || set["reloadError"] != "" {
		t.Errorf("B's knowledge set = %v, want version 1, a digest, no reload error", set)
	}
	if pending["added"] != float64(0) {
		t.Errorf("B's pending changes after the reload = %v, want none", pending)
	}
}

// TestNoReplicaServesAnotherSetsAnswer: replica B does not follow the
// shared version (sharing off), so it keeps the set without the new ADR;
// A's answer to the same query, computed from the new set, sits in the
// shared Redis cache under the same tenant, scope and arguments, yet B
// answers from its own set.
func TestNoReplicaServesAnotherSetsAnswer(t *testing.T) {
	a, b, tenantDir, key := replicaPair(t, func(c *server.Config) { c.KnowledgeRefreshInterval = -1 })
	if err := os.WriteFile(filepath.Join(tenantDir, "adrs", "adr-900-quasar-queues.md"), []byte(newADR), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := callTool(t, a, key, "sync-knowledge", map[string]any{}); o.Code != "OK" {
		t.Fatalf("sync-knowledge on A: %s %v", o.Code, o.Error)
	}
	query := map[string]any{"query": "quasar"}
	if o := callTool(t, a, key, "query-knowledge", query); o.Code != "OK" || itemsFound(o) != 1 {
		t.Fatalf("A's query: %s with %d items, want the new ADR", o.Code, itemsFound(o))
	}
	time.Sleep(300 * time.Millisecond) // B would have been nudged by now, were it sharing
	o := callTool(t, b, key, "query-knowledge", query)
	if o.Code != "OK" || itemsFound(o) != 0 {
		t.Fatalf("B's query: %s with %d items, want none: B's set lacks the ADR, A's cached answer is not B's", o.Code, itemsFound(o))
	}
	if md, _ := o.Result["metadata"].(map[string]any); md["cached"] == true {
		t.Errorf("B's answer came from the cache")
	}
	if o := callTool(t, b, key, "show-knowledge", map[string]any{"id": "adr-900-quasar-queues"}); o.Code != "NOT_FOUND" {
		t.Errorf("B (not sharing) serves the new ADR: %s", o.Code)
	}
}

// TestAutomaticSyncIsTheSystemActor: --sync-interval syncs without a
// caller, through sync-knowledge's code, audited as the system actor over
// the "internal" transport.
func TestAutomaticSyncIsTheSystemActor(t *testing.T) {
	s := testserver.New(t, testserver.Options{Configure: func(c *server.Config) { c.SyncInterval = 100 * time.Millisecond }})
	deadline := time.Now().Add(10 * time.Second)
	for {
		o := callTool(t, REST{S: s}, "", "get-sync-status", map[string]any{})
		stats, _ := o.Result["data"].(map[string]any)["stats"].(map[string]any)
		if n, _ := stats["totalSyncs"].(float64); n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no automatic sync within 10 s: %v", o.Result["data"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	events, _, err := s.Store().ListAudit(t.Context(), store.AuditFilter{Tenant: auth.DevelopmentTenant, Tool: "sync-knowledge"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 {
		t.Fatal("the automatic sync left no audit record")
	}
	for _, e := range events {
		if e.Subject != "system:sync" || e.Transport != "internal" || e.Decision != store.DecisionAllow {
			t.Errorf("audit record %+v, want subject system:sync over internal, allowed", e)
		}
	}
}
