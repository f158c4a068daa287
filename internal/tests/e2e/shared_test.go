package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// uniqueTenantKey writes an auth file with one full API key of a tenant
// no other test (or earlier run) uses, so shared Redis budgets start empty.
func uniqueTenantKey(t *testing.T) (authFile, key string) {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	tenant := "t" + hex.EncodeToString(b[:])
	key = "tsk_" + hex.EncodeToString(b[:]) + "_shared"
	authFile = filepath.Join(t.TempDir(), "auth.yaml")
	body := fmt.Sprintf("api_keys:\n  - key_sha256: %q\n    subject: shared\n    tenant: %s\n    permissions: [\"*\"]\n    identifiers: {user_id: u1, org_id: o1, team_id: tm1, project_id: p1}\n",
		auth.HashKey(key), tenant)
	if err := os.WriteFile(authFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return authFile, key
}

// TestRateLimitIsSharedAcrossReplicas: two service instances sharing Redis
// admit exactly the tool's max_calls per window between them.
func TestRateLimitIsSharedAcrossReplicas(t *testing.T) {
	redisURL := os.Getenv("TOOLSVC_TEST_REDIS")
	if redisURL == "" {
		t.Skip("TOOLSVC_TEST_REDIS is not set; run the tests with `make test`, which sets it")
	}
	authFile, key := uniqueTenantKey(t)
	dsn := testserver.PostgresDSN(t) // both replicas share one store too
	// A generous Redis deadline: this test is about exact admission, not
	// about the fail-closed policy (internal/tests/reliability covers that).
	cfg := func(c *server.Config) {
		c.AuthFile, c.Redis, c.DB, c.RedisTimeout = authFile, redisURL, dsn, 5*time.Second
	}
	replicas := []Transport{
		GRPC{S: testserver.New(t, testserver.Options{Configure: cfg})},
		GRPC{S: testserver.New(t, testserver.Options{Configure: cfg})},
	}
	const calls, limit = 16, 6 // sync-knowledge admits 6 per minute per principal
	var (
		mu    sync.Mutex
		codes = map[string]int{}
		wg    sync.WaitGroup
	)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := replicas[i%2].Call(context.Background(), key, "sync-knowledge", map[string]any{}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			codes[out.Code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes["OK"] != limit || codes["RATE_LIMITED"] != calls-limit {
		t.Fatalf("outcomes %v, want exactly %d OK and %d RATE_LIMITED across both replicas", codes, limit, calls-limit)
	}
}

// TestCacheHitIsReportedAndInvalidated: a repeated query is served from the
// cache — metadata.cached and /metrics say so — and a mutation of the same
// domain invalidates it.
func TestCacheHitIsReportedAndInvalidated(t *testing.T) {
	s := testserver.New(t, testserver.Options{})
	tr := GRPC{S: s}
	ctx := context.Background()
	add := func(content string) {
		if out, err := tr.Call(ctx, "", "add-memory", map[string]any{"content": content}, nil); err != nil || out.Code != "OK" {
			t.Fatalf("add-memory: %v %v", err, out.Error)
		}
	}
	search := func() (cached bool, total float64) {
		out, err := tr.Call(ctx, "", "search-memories", map[string]any{"query": "deployment pipeline", "threshold": 0.3}, nil)
		if err != nil || out.Code != "OK" {
			t.Fatalf("search-memories: %v %v", err, out.Error)
		}
		return out.Result["metadata"].(map[string]any)["cached"].(bool), out.Result["data"].(map[string]any)["totalCount"].(float64)
	}
	add("The deployment pipeline runs on every merge to main")
	if cached, _ := search(); cached {
		t.Fatal("first search reported cached")
	}
	cached, total := search()
	if !cached || total != 1 {
		t.Fatalf("second search: cached=%v total=%v, want a cache hit with 1 result", cached, total)
	}
	if hits := metric(t, s.HTTP, `toolsvc_cache_requests_total{result="hit",tool="search-memories"}`); hits != 1 {
		t.Fatalf("cache hit metric = %v, want 1", hits)
	}
	add("The deployment pipeline deploys to staging first")
	cached, total = search()
	if cached || total != 2 {
		t.Fatalf("after add-memory: cached=%v total=%v, want a fresh result with 2 memories", cached, total)
	}
}

// metric reads one sample from /metrics.
func metric(t *testing.T, base, series string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+]+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("series %s not in /metrics", series)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
