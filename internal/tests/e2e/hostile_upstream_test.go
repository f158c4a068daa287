package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// startHostile runs testdata/hostilemcp, an MCP server that breaks one
// rule (mode), as its own process, and returns its URL.
func startHostile(t *testing.T, mode string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a test MCP server; skipped in -short mode")
	}
	bin := testenv.Binary(t, testenv.RepoRoot(t), "./internal/tests/e2e/testdata/hostilemcp")
	addr := freeAddr(t)
	cmd := exec.Command(bin, "-addr", addr, "-mode", mode)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := 0; ; i++ {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
			break
		}
		if i == 100 {
			t.Fatalf("the hostile MCP server never listened: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "http://" + addr + "/mcp"
}

// hostileFile is an upstreams file naming the hostile server "hostile".
func hostileFile(t *testing.T, url, mcpExtra, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "upstreams.yaml")
	body := "upstreams:\n  - name: hostile\n    mcp:\n      url: " + url + "\n" + mcpExtra + "    timeout: 5s\n" + extra
	writeFile(t, path, body)
	return path
}

// TestHostileUpstreamAnswers: an upstream MCP server's answer with a
// duplicated key, a case variant of a key toolsvc reads, bytes that are
// not UTF-8, or more bytes than its mcp.max_response_bytes never reaches
// an agent: every transport gets PROVIDER_ERROR with reason
// malformed_response, and the clean answer of the same server passes.
func TestHostileUpstreamAnswers(t *testing.T) {
	for _, mode := range []string{"clean", "dupkey", "casekey", "utf8", "big"} {
		t.Run(mode, func(t *testing.T) {
			url := startHostile(t, mode)
			s, c := newUpstreamServer(t, hostileFile(t, url, "      max_response_bytes: 16384\n", "    allow_claims: [read_only]\n"))
			if _, err := s.Registry().Get("get-widget", ""); err != nil {
				t.Fatalf("get-widget not served: %v", err)
			}
			for _, tr := range transportsOf(s) {
				out := call(t, tr, c.Full, "get-widget", map[string]any{"id": "w1"})
				if mode == "clean" {
					if out.Code != "OK" {
						t.Fatalf("%s: clean answer = %s %v", tr.Name(), out.Code, out.Error)
					}
					continue
				}
				details, _ := out.Error["details"].(map[string]any)
				if out.Code != "PROVIDER_ERROR" || details["reason"] != "malformed_response" {
					t.Fatalf("%s: %s answer = %s %v, want PROVIDER_ERROR malformed_response", tr.Name(), mode, out.Code, out.Error)
				}
				if strings.Contains(fmtJSON(out), "rm -rf") || strings.Contains(fmtJSON(out), "www") {
					t.Fatalf("%s: the upstream's data reached the caller: %v", tr.Name(), out)
				}
			}
		})
	}
}

// TestHostileUpstreamDefinitions: what an upstream MCP server says of its
// own tool grants nothing the operator did not. A permission outside its
// namespace is refused at load with the rule named (on /healthz), unless
// the upstreams file allows it; cacheable and idempotent claims do not take
// effect unless allow_claims lists them.
func TestHostileUpstreamDefinitions(t *testing.T) {
	t.Run("foreign permission refused", func(t *testing.T) {
		s, _ := newUpstreamServer(t, hostileFile(t, startHostile(t, "foreignperm"), "", "    allow_claims: [read_only]\n"))
		if _, err := s.Registry().Get("get-widget", ""); err == nil {
			t.Fatal("get-widget is served with memory:read, a permission the operator never gave")
		}
		h := upstreamHealthNamed(t, s, "hostile")
		if !strings.Contains(fmtJSON(h), "mcp.permission_namespace") || !strings.Contains(fmtJSON(h), "memory:read") {
			t.Fatalf("healthz does not name the rule and the permission: %v", h)
		}
	})
	t.Run("undocumented parameter refused", func(t *testing.T) {
		s, _ := newUpstreamServer(t, hostileFile(t, startHostile(t, "undocumented"), "", "    allow_claims: [read_only]\n"))
		if _, err := s.Registry().Get("get-widget", ""); err == nil {
			t.Fatal("get-widget is served although its parameter id has no description")
		}
		h := upstreamHealthNamed(t, s, "hostile")
		if j := fmtJSON(h); !strings.Contains(j, "mcp.parameter_description") || !strings.Contains(j, "get-widget") || !strings.Contains(j, ".id") {
			t.Fatalf("healthz does not name the tool, the rule and the parameter: %v", h)
		}
	})
	t.Run("foreign permission allowed by the operator", func(t *testing.T) {
		s, _ := newUpstreamServer(t, hostileFile(t, startHostile(t, "foreignperm"), "", "    allow_claims: [read_only]\n    allow_permissions: [memory:read]\n"))
		tool, err := s.Registry().Get("get-widget", "")
		if err != nil || tool.Spec.GetPermissions()[0] != "memory:read" {
			t.Fatalf("get-widget = %v, %v; want served with memory:read", tool, err)
		}
	})
	t.Run("claims without the operator", func(t *testing.T) {
		s, _ := newUpstreamServer(t, hostileFile(t, startHostile(t, "claims"), "", ""))
		tool, err := s.Registry().Get("get-widget", "")
		if err != nil {
			t.Fatal(err)
		}
		if sp := tool.Spec; sp.GetCacheable() || sp.GetIdempotent() || sp.GetReadOnly() || !sp.GetSideEffect() {
			t.Fatalf("the upstream's own claims took effect: %v", sp)
		}
	})
	t.Run("claims the operator allows", func(t *testing.T) {
		s, _ := newUpstreamServer(t, hostileFile(t, startHostile(t, "claims"), "", "    allow_claims: [read_only, cacheable]\n"))
		tool, err := s.Registry().Get("get-widget", "")
		if err != nil {
			t.Fatal(err)
		}
		if sp := tool.Spec; !sp.GetCacheable() || sp.GetCacheTtl() != 300 || !sp.GetReadOnly() || sp.GetSideEffect() {
			t.Fatalf("the allowed claims did not take effect: %v", sp)
		}
	})
}

// upstreamHealthNamed is the /healthz entry of one upstream.
func upstreamHealthNamed(t *testing.T, s *testserver.Server, name string) map[string]any {
	t.Helper()
	ups, _ := healthz(t, s)["upstreams"].([]any)
	for _, u := range ups {
		if m, ok := u.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	t.Fatalf("healthz has no upstream %s: %v", name, ups)
	return nil
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMCPUnknownToolHasHints: MCP's unknown-tool error (-32602, a
// protocol fault) carries the chain's agent hints in its data, so an agent
// still has a next step: list the tools it may use.
func TestMCPUnknownToolHasHints(t *testing.T) {
	c := testserver.WriteCredentials(t)
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) { cfg.AuthFile = c.AuthFile }})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, rpcErr, err := MCP{S: s}.Protocol(ctx, c.Full, "tools/call", map[string]any{"name": "no-such-tool", "arguments": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if rpcErr == nil || rpcErr.Code != -32602 {
		t.Fatalf("error = %+v, want -32602", rpcErr)
	}
	var data struct {
		Code       string `json:"code"`
		AgentHints struct {
			SuggestedNextActions []struct {
				Action string `json:"action"`
			} `json:"suggestedNextActions"`
		} `json:"agentHints"`
	}
	if err := json.Unmarshal(rpcErr.Data, &data); err != nil {
		t.Fatalf("data %s: %v", rpcErr.Data, err)
	}
	acts := data.AgentHints.SuggestedNextActions
	if data.Code != "NOT_FOUND" || len(acts) == 0 || acts[0].Action != "list-tools" {
		t.Fatalf("data = %s, want NOT_FOUND hints suggesting list-tools", rpcErr.Data)
	}
}
