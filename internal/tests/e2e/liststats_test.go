package e2e

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestListStatsLine: a running server logs the pressure line (the calls'
// percentiles and the tool list's figures) at --list-stats-interval
// (docs/OPERATIONS.md).
func TestListStatsLine(t *testing.T) {
	cfg := &server.Config{DisableGRPC: true, HTTPAddr: "127.0.0.1:0", KnowledgeDir: testserver.KnowledgeDir(t),
		DB: t.TempDir() + "/toolsvc.db", InsecureAllowAnonymous: true, ListStatsInterval: 20 * time.Millisecond}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	var logs testenv.Buffer
	srv, err := server.New(t.Context(), cfg, slog.New(slog.NewJSONHandler(&logs, nil)), server.Builtin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), `"msg":"pressure"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	out := logs.String()
	for _, k := range []string{`"msg":"pressure"`, `"calls":`, `"p95_ms":`, `"p99_ms":`, `"max_ms":`, `"list_requests":`, `"hit_rate_pct":`, `"build_count":`, `"build_failures":0`, `"build_avg_ms":`, `"build_max_ms":`} {
		if !strings.Contains(out, k) {
			t.Fatalf("log lacks %s:\n%s", k, out)
		}
	}
}
