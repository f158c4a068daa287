package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestGrpcurlSeesTheServices runs the real grpcurl (pinned in tools/go.mod)
// against a real listener: reflection lists the services, and ListTools
// returns the tools with their derived schemas.
func TestGrpcurlSeesTheServices(t *testing.T) {
	if testing.Short() {
		t.Skip("builds grpcurl; skipped in -short mode")
	}
	addr := freeAddr(t)
	cfg := new(server.Defaults())
	cfg.GRPCAddr, cfg.DisableHTTP, cfg.HTTPAddr = addr, true, ""
	cfg.DB, cfg.KnowledgeDir = filepath.Join(t.TempDir(), "t.db"), testserver.KnowledgeDir(t)
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), server.Builtin)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("server did not stop")
		}
	})
	root := testenv.RepoRoot(t)
	grpcurl := func(args ...string) string {
		t.Helper()
		var out []byte
		var err error
		for range 50 { // the listener may take a moment to come up
			cmd := exec.Command("go", append([]string{"tool", "-modfile=" + filepath.Join(root, "tools", "go.mod"), "grpcurl", "-plaintext"}, args...)...)
			cmd.Dir = root
			if out, err = cmd.CombinedOutput(); err == nil {
				return string(out)
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("grpcurl %v: %v\n%s", args, err, out)
		return ""
	}
	list := grpcurl(addr, "list")
	for _, svc := range []string{"toolsvc.v1.ToolService", "toolsvc.memory.v1.MemoryService", "toolsvc.knowledge.v1.KnowledgeService",
		"toolsvc.sync.v1.SyncService", "toolsvc.audit.v1.AuditService", "grpc.health.v1.Health"} {
		if !strings.Contains(list, svc) {
			t.Errorf("grpcurl list does not show %s:\n%s", svc, list)
		}
	}
	var resp struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
		TotalCount int `json:"totalCount"`
	}
	if err := json.Unmarshal([]byte(grpcurl("-d", "{}", addr, "toolsvc.v1.ToolService/ListTools")), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.TotalCount != 10 || len(resp.Tools) != 10 {
		t.Fatalf("ListTools returned %d tools (total %d), want 10", len(resp.Tools), resp.TotalCount)
	}
	for _, tool := range resp.Tools {
		if tool.InputSchema["type"] != "object" || tool.InputSchema["additionalProperties"] != false {
			t.Errorf("%s: input schema %v", tool.Name, tool.InputSchema)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
