package toolsvc

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/bench/internal/load"
)

// TestEveryTransportAgainstARealServer builds toolsvc, starts it with an
// auth file of keys, and drives get-sync-status over every transport
// through the load engine: every call must succeed, and the server's CPU
// must be charged to the calls.
func TestEveryTransportAgainstARealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs toolsvc")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	repo, err := FindRepo(wd)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, err := Build(t.Context(), repo, dir)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := WriteKeys(dir, "bench", 64)
	if err != nil {
		t.Fatal(err)
	}
	tool, err := Resolve("get-sync-status")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		transport string
		extra     []string
	}{
		{name: "grpc", transport: GRPC},
		{name: "rest", transport: REST},
		{name: "mcp with sessions", transport: MCPStateful},
		{name: "mcp stateless", transport: MCPStateless, extra: []string{"--mcp-stateless"}},
		{name: "mcp 2026-07-28", transport: MCP2026},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(t.Context(), Options{Binary: bin, DB: filepath.Join(t.TempDir(), "t.db"),
				KnowledgeDir: filepath.Join(repo, "examples", "knowledge"), AuthFile: keys.File, Extra: tt.extra})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			target, closeTarget, err := tool.Target(tt.transport, Endpoint{GRPCAddr: p.GRPCAddr, HTTPBase: "http://" + p.HTTPAddr, Keys: keys.Values}, nil, 4)
			if err != nil {
				t.Fatal(err)
			}
			defer closeTarget()
			points, err := load.Run(t.Context(), target, load.Plan{Concurrency: []int{1, 4}, Duration: 300 * time.Millisecond, Warmup: -1, PID: p.PID()})
			if err != nil {
				t.Fatal(err)
			}
			for _, pt := range points {
				if pt.Requests == 0 || pt.Errors != 0 {
					t.Errorf("concurrency %d: %d calls, errors %v", pt.Concurrency, pt.Requests, pt.ErrorsByCode)
				}
				if pt.PeakRSSBytes == 0 {
					t.Errorf("no server RSS at concurrency %d", pt.Concurrency)
				}
			}
			// Without keys the server refuses: the driver must report it.
			anon, closeAnon, err := tool.Target(tt.transport, Endpoint{GRPCAddr: p.GRPCAddr, HTTPBase: "http://" + p.HTTPAddr}, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer closeAnon()
			if code := anon.Call(t.Context(), 0); code == "" {
				t.Error("an unauthenticated call succeeded")
			}
		})
	}
}
