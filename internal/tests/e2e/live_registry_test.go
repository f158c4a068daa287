package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestLiveRegistry: tools appear and disappear while toolsvc runs. An
// upstream added to the upstreams file (read again by Server.Reload, what
// SIGHUP and a changed file run) is served on every transport and in
// /openapi.json, and MCP clients hear notifications/tools/list_changed; a
// call in flight when its upstream is removed finishes; once removed, its
// tools are NOT_FOUND everywhere; a name another source serves is refused
// with the reason, never an override.
func TestLiveRegistry(t *testing.T) {
	up := startDeploys(t, "-delay", "300ms")
	file := mcpUpstreamsFile(t, "url: "+up.url, "")
	withDeploys, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("upstreams: []\n")
	s, c := newUpstreamServer(t, file)
	args := map[string]any{"service": "billing", "version": "1.4.2", "environment": "staging"}
	for _, tr := range transportsOf(s) {
		if out := call(t, tr, c.Full, "create-deployment", args); out.Code != "NOT_FOUND" {
			t.Fatalf("%s before the upstream is added: %s", tr.Name(), out.Code)
		}
	}
	events := listenMCP(t, s, c.Full)

	write(string(withDeploys))
	if err := s.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, tr := range transportsOf(s) {
		if out := call(t, tr, c.Full, "create-deployment", args); out.Code != "OK" {
			t.Fatalf("%s after the upstream was added: %s %v", tr.Name(), out.Code, out.Error)
		}
	}
	if !strings.Contains(openAPI(t, s), `"create-deployment"`) {
		t.Fatal("/openapi.json does not follow the added upstream")
	}
	events.await(t, "notifications/tools/list_changed")

	// A call in flight when its upstream goes away finishes on the
	// registry it started with.
	inflight := make(chan Outcome, 1)
	go func() {
		out, _ := REST{S: s}.Call(context.Background(), c.Full, "list-deployments", map[string]any{}, nil)
		inflight <- out
	}()
	time.Sleep(100 * time.Millisecond)
	write("upstreams: []\n")
	if err := s.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if out := <-inflight; out.Code != "OK" {
		t.Fatalf("the call in flight during the reload: %s %v", out.Code, out.Error)
	}
	for _, tr := range transportsOf(s) {
		if out := call(t, tr, c.Full, "create-deployment", args); out.Code != "NOT_FOUND" {
			t.Fatalf("%s after the upstream was removed: %s %v", tr.Name(), out.Code, out.Error)
		}
	}
	if strings.Contains(openAPI(t, s), `"create-deployment"`) {
		t.Fatal("/openapi.json still lists the removed upstream's tool")
	}

	// A name an in-tree tool serves, in the same version: refused.
	write(string(withDeploys) + "    overlays:\n      list-deployments: {name: add-memory, version: 1.0.0}\n")
	if err := s.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if tool, _ := s.Registry().Get("add-memory", ""); tool == nil || tool.Source != "" {
		t.Fatalf("add-memory was overridden: %v", tool)
	}
	refused := fmt.Sprint(upstreamHealth(t, s)["tools_refused"])
	if !strings.Contains(refused, "add-memory") || !strings.Contains(refused, "conflict") {
		t.Fatalf("healthz refusals %s do not report the conflict", refused)
	}
	if out := call(t, MCP{S: s}, c.Full, "create-deployment", args); out.Code != "OK" {
		t.Fatalf("the upstream's other tool: %s %v", out.Code, out.Error)
	}

	// A file that does not parse leaves the upstreams in service.
	write("upstreams: [\n")
	if err := s.Reload(t.Context()); err == nil {
		t.Fatal("a broken upstreams file was accepted")
	}
	if out := call(t, GRPC{S: s}, c.Full, "create-deployment", args); out.Code != "OK" {
		t.Fatalf("after a broken file: %s %v", out.Code, out.Error)
	}
}

// TestMCPUpstreamListChanged: an MCP server whose tool list changes says
// so (notifications/tools/list_changed); toolsvc reads its list again and
// serves the new tool, with no reload, over HTTP and over stdio.
func TestMCPUpstreamListChanged(t *testing.T) {
	for _, how := range []string{"http", "stdio"} {
		t.Run(how, func(t *testing.T) {
			entry := "command: [" + deploysBinary(t) + ", -stdio, -grow-after, 1500ms]"
			if how == "http" {
				entry = "url: " + startDeploys(t, "-grow-after", "1500ms").url
			}
			s, c := newUpstreamServer(t, mcpUpstreamsFile(t, entry, ""))
			if _, err := s.Registry().Get("get-deployment", ""); err == nil {
				t.Fatal("get-deployment served before the server added it")
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				if _, err := s.Registry().Get("get-deployment", ""); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("get-deployment never appeared after the server's tools/list_changed")
				}
				time.Sleep(100 * time.Millisecond)
			}
			out := call(t, REST{S: s}, c.Full, "create-deployment", map[string]any{"service": "search", "version": "2.0.0", "environment": "staging"})
			if out.Code != "OK" {
				t.Fatalf("create-deployment: %s %v", out.Code, out.Error)
			}
			id := out.Result["data"].(map[string]any)["deployment"].(map[string]any)["id"]
			for _, tr := range transportsOf(s) {
				if out := call(t, tr, c.Full, "get-deployment", map[string]any{"id": id}); out.Code != "OK" {
					t.Fatalf("%s get-deployment: %s %v", tr.Name(), out.Code, out.Error)
				}
				// The tool's own ToolError (isError) passes with its code.
				if out := call(t, tr, c.Full, "get-deployment", map[string]any{"id": "dep-999999"}); out.Code != "NOT_FOUND" {
					t.Fatalf("%s get-deployment of a missing id: %s %v", tr.Name(), out.Code, out.Error)
				}
			}
		})
	}
}

func openAPI(t *testing.T, s *testserver.Server) string {
	t.Helper()
	resp, err := http.Get(s.HTTP + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// mcpEvents are the messages of an MCP session's GET event stream.
type mcpEvents chan string

// listenMCP opens an MCP session of token and its GET event stream.
func listenMCP(t *testing.T, s *testserver.Server, token string) mcpEvents {
	t.Helper()
	post := func(session, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, s.HTTP+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize gave no session (HTTP %d)", resp.StatusCode)
	}
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.HTTP+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET /mcp: HTTP %d", stream.StatusCode)
	}
	events := make(mcpEvents, 16)
	go func() {
		defer stream.Body.Close()
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
			if line := sc.Bytes(); bytes.HasPrefix(line, []byte("data:")) {
				events <- string(line)
			}
		}
	}()
	return events
}

// await waits for a message naming method.
func (e mcpEvents) await(t *testing.T, method string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-e:
			if strings.Contains(ev, `"`+method+`"`) {
				return
			}
		case <-timeout:
			t.Fatalf("no %s on the session's event stream", method)
		}
	}
}
