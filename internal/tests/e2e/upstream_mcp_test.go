package e2e

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// deploysToken is the credential toolsvc presents to the example MCP
// server (never a caller's).
const deploysToken = "deploys-upstream-secret"

// deploysBinary builds the example MCP server (its own module,
// examples/upstreams/deploys) once per test binary.
func deploysBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the example MCP server; skipped in -short mode")
	}
	return testenv.Binary(t, filepath.Join(testenv.RepoRoot(t), "examples", "upstreams", "deploys"), "./cmd/deploys")
}

// deploys is a running example MCP server.
type deploys struct {
	url  string
	proc *exec.Cmd
}

// startDeploys runs the example MCP server over Streamable HTTP on a
// loopback port, as its own process.
func startDeploys(t *testing.T, args ...string) *deploys {
	t.Helper()
	bin := deploysBinary(t)
	addr := freeAddr(t)
	cmd := exec.Command(bin, append([]string{"-addr", addr}, args...)...)
	cmd.Env = append(os.Environ(), "DEPLOYS_TOKEN="+deploysToken)
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
			t.Fatalf("the example MCP server never listened: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &deploys{url: "http://" + addr + "/mcp", proc: cmd}
}

// mcpUpstreamsFile writes an upstreams file naming one MCP server by
// entry (url: ... or command: [...]).
func mcpUpstreamsFile(t *testing.T, entry, extra string) string {
	t.Helper()
	t.Setenv("DEPLOYS_TOKEN", deploysToken)
	body := "upstreams:\n  - name: deploys\n    mcp:\n      " + entry + "\n    credential: {bearer_env: DEPLOYS_TOKEN}\n    timeout: 2s\n    allow_claims: [read_only]\n    identity: {plain_headers: true}\n" + extra
	path := filepath.Join(t.TempDir(), "upstreams.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMCPUpstreamOnEveryTransport: the example MCP server's tools are
// listed and called on gRPC, REST and MCP through the one chain, with the
// same data and hints; the server sees the principal as _meta (its
// deployments are per tenant and name their creator), never the caller's
// token; input is checked against the tool's inputSchema before the call.
func TestMCPUpstreamOnEveryTransport(t *testing.T) {
	up := startDeploys(t)
	s, c := newUpstreamServer(t, mcpUpstreamsFile(t, "url: "+up.url, ""))

	for _, name := range []string{"create-deployment", "list-deployments"} {
		tool, err := s.Registry().Get(name, "")
		if err != nil {
			t.Fatalf("%s not served: %v", name, err)
		}
		if tool.Source != "upstream deploys" {
			t.Fatalf("%s source = %q", name, tool.Source)
		}
	}
	resp, err := http.Get(s.HTTP + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(doc), `"create-deployment"`) || !strings.Contains(string(doc), `"list-deployments"`) {
		t.Fatal("/openapi.json does not list the MCP server's tools")
	}

	var listed []map[string]any
	for _, tr := range transportsOf(s) {
		out := call(t, tr, c.Full, "create-deployment", map[string]any{"service": "billing", "version": "1.4.2", "environment": "staging"})
		if out.Code != "OK" {
			t.Fatalf("%s create-deployment: %s %v", tr.Name(), out.Code, out.Error)
		}
		dep := out.Result["data"].(map[string]any)["deployment"].(map[string]any)
		if dep["service"] != "billing" || dep["created_by"] != "full" || dep["status"] != "pending" {
			t.Fatalf("%s: deployment = %v, want billing created by full", tr.Name(), dep)
		}
		hints := out.Result["agentHints"].(map[string]any)
		if hints["confidence"] != 0.0 || hints["sourceQuality"] != "unknown" {
			t.Fatalf("%s: hints of a tool that gave none = %v", tr.Name(), hints)
		}
		if meta := out.Result["metadata"].(map[string]any); meta["tool"] != "create-deployment" || meta["toolVersion"] != "1.0.0" {
			t.Fatalf("%s: metadata = %v", tr.Name(), meta)
		}

		out = call(t, tr, c.Full, "list-deployments", map[string]any{"service": "billing", "limit": 1})
		if out.Code != "OK" {
			t.Fatalf("%s list-deployments: %s %v", tr.Name(), out.Code, out.Error)
		}
		// list-deployments returns its hints in _meta["toolsvc/agentHints"].
		if h := out.Result["agentHints"].(map[string]any); h["confidence"] != 1.0 || h["sourceQuality"] != "high" ||
			!strings.Contains(h["reasoning"].(string), "matching deployments") {
			t.Fatalf("%s: list-deployments hints = %v, want the upstream's own", tr.Name(), h)
		}
		data := out.Result["data"].(map[string]any)
		for _, d := range data["deployments"].([]any) {
			d.(map[string]any)["id"], d.(map[string]any)["created_at"] = "normalized", "normalized"
		}
		data["total"] = "normalized"
		// The hints count this transport's deployments, which the earlier
		// transports' calls added to.
		listedHints := maps.Clone(out.Result["agentHints"].(map[string]any))
		delete(listedHints, "reasoning")
		delete(listedHints, "suggestedNextActions")
		listed = append(listed, map[string]any{"data": data, "agentHints": listedHints})

		for _, bad := range []struct {
			name string
			args map[string]any
		}{
			{"environment", map[string]any{"service": "billing", "version": "1.4.2", "environment": "moon"}},
			// A missing required property is named, as protovalidate names it.
			{"missing property \"environment\"", map[string]any{"service": "billing", "version": "1.4.2"}},
			{"force", map[string]any{"service": "billing", "version": "1.4.2", "environment": "staging", "force": true}},
		} {
			name, args := bad.name, bad.args
			out = call(t, tr, c.Full, "create-deployment", args)
			if out.Code != "INVALID_INPUT" || !strings.Contains(fmt.Sprint(out.Error), name) {
				t.Fatalf("%s: invalid input %v = %s %v, want INVALID_INPUT naming %s", tr.Name(), args, out.Code, out.Error, name)
			}
		}
	}
	for i := 1; i < len(listed); i++ {
		if !reflect.DeepEqual(normalize(listed[0]), normalize(listed[i])) {
			t.Fatalf("transports disagree:\n%v\n%v", listed[0], listed[i])
		}
	}
	// Another tenant sees none of acme's deployments.
	if out := call(t, GRPC{S: s}, c.OtherTenant, "list-deployments", map[string]any{}); out.Code != "OK" || out.Result["data"].(map[string]any)["total"] != 0.0 {
		t.Fatalf("globex list-deployments = %s %v", out.Code, out.Result)
	}

	// Every call was audited under the tool's name: one allowed and three
	// invalid per transport.
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, _, err := s.Store().ListAudit(t.Context(), store.AuditFilter{Tenant: "acme", Tool: "create-deployment", Limit: store.MaxAuditLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(events) == 12 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create-deployment audit records = %d, want 12", len(events))
		}
		time.Sleep(50 * time.Millisecond)
	}
	h := upstreamHealth(t, s)
	if h["reachable"] != true || h["kind"] != "mcp" || len(h["tools_served"].([]any)) != 2 || len(h["tools_refused"].([]any)) != 0 {
		t.Fatalf("healthz upstream = %v", h)
	}
}

// TestMCPUpstreamAuthMatrix runs the auth matrix over the MCP server's
// tools on every transport.
func TestMCPUpstreamAuthMatrix(t *testing.T) {
	up := startDeploys(t)
	s, c := newUpstreamServer(t, mcpUpstreamsFile(t, "url: "+up.url, ""))
	tools := []MatrixTool{
		{Name: "create-deployment", SideEffect: true, Args: func(string) map[string]any {
			return map[string]any{"service": "billing", "version": "1.4.2", "environment": "staging"}
		}},
		{Name: "list-deployments", Args: func(string) map[string]any { return map[string]any{"environment": "staging"} }},
	}
	RunMatrixTools(t, c, tools, nil, transportsOf(s)...)
}

// TestMCPUpstreamFailures: each way an MCP server can fail is an error a
// caller can act on, with nothing of the server's internals, and a tool
// breaking the tool contract (docs/CONTRACTS.md) is refused at load with its reason.
func TestMCPUpstreamFailures(t *testing.T) {
	t.Run("slow", func(t *testing.T) {
		up := startDeploys(t, "-delay", "5s")
		s, c := newUpstreamServer(t, mcpUpstreamsFile(t, "url: "+up.url, ""))
		out := call(t, REST{S: s}, c.Full, "list-deployments", map[string]any{})
		if out.Code != "TIMEOUT" || out.Error["retryable"] != true {
			t.Fatalf("slow upstream: %s %v", out.Code, out.Error)
		}
	})
	t.Run("junk result", func(t *testing.T) {
		up := startDeploys(t, "-junk")
		s, c := newUpstreamServer(t, mcpUpstreamsFile(t, "url: "+up.url, ""))
		for _, tr := range transportsOf(s) {
			out := call(t, tr, c.Full, "list-deployments", map[string]any{})
			details, _ := out.Error["details"].(map[string]any)
			if out.Code != "PROVIDER_ERROR" || out.Error["retryable"] != false || details["reason"] != "malformed_response" || out.Result != nil {
				t.Fatalf("%s: junk result: %s %v %v", tr.Name(), out.Code, out.Error, out.Result)
			}
			if !strings.Contains(fmt.Sprint(out.Error["fieldViolations"]), "deployments") {
				t.Fatalf("%s: the refusal does not say what broke the outputSchema: %v", tr.Name(), out.Error)
			}
		}
	})
	t.Run("killed", func(t *testing.T) {
		up := startDeploys(t)
		s, c := newUpstreamServer(t, mcpUpstreamsFile(t, "url: "+up.url, ""))
		_ = up.proc.Process.Signal(syscall.SIGKILL)
		_ = up.proc.Wait()
		for _, tr := range transportsOf(s) {
			out := call(t, tr, c.Full, "list-deployments", map[string]any{})
			if out.Code != "PROVIDER_ERROR" || out.Error["retryable"] != true || strings.Contains(fmt.Sprint(out.Error), "refused") {
				t.Fatalf("%s: killed upstream: %s %v", tr.Name(), out.Code, out.Error)
			}
		}
		if out := call(t, GRPC{S: s}, c.Full, "get-sync-status", map[string]any{}); out.Code != "OK" {
			t.Fatalf("built-in tool after the upstream died: %v", out.Error)
		}
	})
	t.Run("wrong credential", func(t *testing.T) {
		up := startDeploys(t)
		file := mcpUpstreamsFile(t, "url: "+up.url, "")
		t.Setenv("DEPLOYS_TOKEN", "not-the-token")
		s, _ := newUpstreamServer(t, file)
		h := upstreamHealth(t, s)
		if h["reachable"] != false || !strings.Contains(fmt.Sprint(h["error"]), "credential refused") {
			t.Fatalf("healthz = %v", h)
		}
	})
	t.Run("contract refused at load", func(t *testing.T) {
		up := startDeploys(t, "-bad-tools")
		s, c := newUpstreamServer(t, mcpUpstreamsFile(t, "url: "+up.url, ""))
		for _, name := range []string{"tail-deployment-logs", "patch-deployment"} {
			if _, err := s.Registry().Get(name, ""); err == nil {
				t.Fatalf("%s served despite breaking seed 001's contract", name)
			}
			if out := call(t, REST{S: s}, c.Full, name, map[string]any{}); out.Code != "NOT_FOUND" {
				t.Fatalf("%s: %s", name, out.Code)
			}
		}
		if out := call(t, REST{S: s}, c.Full, "list-deployments", map[string]any{}); out.Code != "OK" {
			t.Fatalf("a passing tool of the same server: %v", out.Error)
		}
		refused := fmt.Sprint(upstreamHealth(t, s)["tools_refused"])
		for _, want := range []string{"tail-deployment-logs", "mcp.output_schema", "patch-deployment", "mcp.no_free_form_parameters"} {
			if !strings.Contains(refused, want) {
				t.Fatalf("healthz refusals %s do not name %q", refused, want)
			}
		}
	})
	t.Run("name conflict", func(t *testing.T) {
		up := startDeploys(t)
		// An overlay renaming list-deployments to a built-in tool's name
		// and version: refused, never an override.
		s, _ := newUpstreamServer(t, mcpUpstreamsFile(t, "url: "+up.url, "    overlays:\n      list-deployments: {name: add-memory, version: 1.0.0}\n"))
		if tool, _ := s.Registry().Get("add-memory", ""); tool == nil || tool.Source != "" {
			t.Fatalf("add-memory was overridden by the upstream: %v", tool)
		}
		refused := fmt.Sprint(upstreamHealth(t, s)["tools_refused"])
		if !strings.Contains(refused, "add-memory") || !strings.Contains(refused, "conflict") {
			t.Fatalf("healthz refusals %s do not report the conflict", refused)
		}
	})
}

// TestMCPUpstreamOverStdio: the same server as a child process speaking
// stdio; killed, its tools fail with PROVIDER_ERROR.
func TestMCPUpstreamOverStdio(t *testing.T) {
	bin := deploysBinary(t)
	s, c := newUpstreamServer(t, mcpUpstreamsFile(t, "command: ["+bin+", -stdio]", ""))
	for _, tr := range transportsOf(s) {
		out := call(t, tr, c.Full, "create-deployment", map[string]any{"service": "search", "version": "2.0.0", "environment": "production"})
		if out.Code != "OK" {
			t.Fatalf("%s create-deployment over stdio: %s %v", tr.Name(), out.Code, out.Error)
		}
	}
	out := call(t, MCP{S: s}, c.Full, "list-deployments", map[string]any{"environment": "production"})
	if out.Code != "OK" || out.Result["data"].(map[string]any)["total"] != 3.0 {
		t.Fatalf("list-deployments over stdio = %s %v", out.Code, out.Result)
	}
}

// TestMCPUpstreamExamplesAreExecutable runs every example of the MCP
// server's tools (from their inputSchema's examples and their
// _meta["toolsvc/tool"]) and checks each result against the tool's output
// schema as toolsvc serves it: the envelope whose data is the server's
// outputSchema.
func TestMCPUpstreamExamplesAreExecutable(t *testing.T) {
	up := startDeploys(t, "-grow-after", "1ms")
	time.Sleep(200 * time.Millisecond) // get-deployment is added
	s, c := newUpstreamServer(t, mcpUpstreamsFile(t, "url: "+up.url, ""))
	ran := 0
	for _, tool := range s.Registry().All() {
		if tool.Source != "upstream deploys" {
			continue
		}
		validate := compileSchema(t, tool)
		for i, ex := range tool.Examples {
			t.Run(fmt.Sprintf("%s/%d", tool.Name, i), func(t *testing.T) {
				out := call(t, GRPC{S: s}, c.Full, tool.Name, ex.ParamsJSON)
				want := cmpOr(ex.ErrorCode, "OK")
				if out.Code != want {
					t.Fatalf("%q: code %s, want %s (%v)", ex.Description, out.Code, want, out.Error)
				}
				got := out.Error
				if want == "OK" {
					got = out.Result["data"].(map[string]any)
					if err := validate.Validate(roundTrip(t, out.Result)); err != nil {
						t.Fatalf("result does not conform to the output schema: %v", err)
					}
				}
				if path, ok := subset(ex.Expected, got, ""); !ok {
					t.Fatalf("%q: expected %s to match\nwant %v\ngot  %v", ex.Description, path, ex.Expected, got)
				}
			})
			ran++
		}
	}
	if ran != 3 {
		t.Fatalf("ran %d examples of the MCP server's tools, want 3 (list, create, get)", ran)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
