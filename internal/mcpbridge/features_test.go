package mcpbridge_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/server"
)

// TestResources lists, templates and reads knowledge items as resources,
// and completes the template's id.
func TestResources(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	c := newClient(t, srv.HTTP)
	c.initialize("resources")
	var synced toolResult
	c.result("tools/call", map[string]any{"name": "sync-knowledge", "arguments": map[string]any{}}, &synced)
	if synced.IsError {
		t.Fatalf("sync-knowledge: %+v", synced)
	}
	var list struct {
		Resources []struct {
			URI, Name, MimeType string
		} `json:"resources"`
	}
	c.result("resources/list", nil, &list)
	if len(list.Resources) == 0 {
		t.Fatal("no resources")
	}
	first := list.Resources[0]
	if !strings.HasPrefix(first.URI, "knowledge://") || first.Name == "" || first.MimeType != "text/markdown" {
		t.Fatalf("resource = %+v", first)
	}
	var read struct {
		Contents []struct {
			URI, MimeType, Text string
		} `json:"contents"`
	}
	c.result("resources/read", map[string]any{"uri": first.URI}, &read)
	if len(read.Contents) != 2 || read.Contents[0].URI != first.URI || read.Contents[0].Text == "" || !json.Valid([]byte(read.Contents[1].Text)) {
		t.Fatalf("read = %+v", read)
	}
	var tpl struct {
		ResourceTemplates []struct{ URITemplate string } `json:"resourceTemplates"`
	}
	c.result("resources/templates/list", nil, &tpl)
	// Knowledge items, and each tool's whole outputSchema (outputschema.go).
	if len(tpl.ResourceTemplates) != 2 || tpl.ResourceTemplates[0].URITemplate != "knowledge://{id}" ||
		tpl.ResourceTemplates[1].URITemplate != "toolsvc://tools/{name}/output-schema" {
		t.Fatalf("templates = %+v", tpl)
	}
	for _, tc := range []struct {
		name string
		uri  string
		code int
	}{
		{name: "missing item", uri: "knowledge://adr-999-nothing-here", code: -32002},
		{name: "other scheme", uri: "file:///etc/passwd", code: -32002},
		{name: "missing tool's output schema", uri: "toolsvc://tools/no-such-tool/output-schema", code: -32002},
		{name: "not a tool's output schema", uri: "toolsvc://tools/get-sync-status/input-schema", code: -32002},
	} {
		if r := c.call("resources/read", map[string]any{"uri": tc.uri}); r.Error == nil || r.Error.Code != tc.code {
			t.Errorf("%s: %s %+v", tc.name, r.Result, r.Error)
		}
	}
	id := strings.TrimPrefix(first.URI, "knowledge://")
	var comp struct {
		Completion struct{ Values []string } `json:"completion"`
	}
	c.result("completion/complete", map[string]any{"ref": map[string]any{"type": "ref/resource", "uri": "knowledge://{id}"},
		"argument": map[string]any{"name": "id", "value": id[:3]}}, &comp)
	found := false
	for _, v := range comp.Completion.Values {
		found = found || v == id
		if !strings.HasPrefix(v, id[:3]) {
			t.Errorf("completion %q does not start with %q", v, id[:3])
		}
	}
	if !found {
		t.Fatalf("completion of %q = %v, want %s", id[:3], comp.Completion.Values, id)
	}
}

// TestProgressAndLogging calls sync-knowledge with a progress token over an
// event stream: progress notifications, then log messages, then the result.
func TestProgressAndLogging(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(c *server.Config) {})
	c := newClient(t, srv.HTTP)
	c.initialize("progress")
	var empty map[string]any
	c.result("logging/setLevel", map[string]any{"level": "debug"}, &empty)
	body := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"sync-knowledge","arguments":{"force":true},"_meta":{"progressToken":"tok-1"}}}`
	resp, b := c.post(body, http.Header{"Accept": {"text/event-stream"}})
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	msgs := decodeMessages(t, resp.Header.Get("Content-Type"), b)
	var progress []float64
	logs := 0
	for _, m := range msgs[:len(msgs)-1] {
		switch m.Method {
		case "notifications/progress":
			var p struct {
				ProgressToken string  `json:"progressToken"`
				Progress      float64 `json:"progress"`
			}
			if err := json.Unmarshal(m.Params, &p); err != nil || p.ProgressToken != "tok-1" {
				t.Fatalf("progress %s: %v", m.Params, err)
			}
			progress = append(progress, p.Progress)
		case "notifications/message":
			logs++
		default:
			t.Fatalf("unexpected message %+v", m)
		}
	}
	if len(progress) < 2 {
		t.Fatalf("progress notifications = %v, want several", progress)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] <= progress[i-1] {
			t.Fatalf("progress does not increase: %v", progress)
		}
	}
	if logs != 1 {
		t.Fatalf("log messages = %d, want 1 at debug", logs)
	}
	last := msgs[len(msgs)-1]
	if string(last.ID) != "42" || last.Error != nil {
		t.Fatalf("final message = %+v", last)
	}
}

// TestHealthzCacheFigures checks the tools/list cache figures on the
// operator view of /healthz (development mode: the anonymous caller may).
func TestHealthzCacheFigures(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	c := newClient(t, srv.HTTP)
	c.initialize("health")
	for range 3 {
		listAll(t, c)
	}
	resp, err := http.Get(srv.HTTP + "/healthz?view=operator")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		MCP struct {
			Hits       uint64  `json:"cache_hits"`
			Misses     uint64  `json:"cache_misses"`
			Refreshes  uint64  `json:"cache_refreshes"`
			HitRatePct float64 `json:"hit_rate_pct"`
		} `json:"mcp"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if h.MCP.Misses != 1 || h.MCP.Hits != 2 || h.MCP.HitRatePct < 66 || h.MCP.HitRatePct > 67 {
		t.Fatalf("healthz mcp = %+v", h.MCP)
	}
}

// TestToolsListChanged: when the tool set changes, sessions' event
// streams and stdio clients get notifications/tools/list_changed, and the
// next listings (HTTP pages, stdio) are of the new set.
func TestToolsListChanged(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	c := newClient(t, srv.HTTP)
	c.initialize("watcher")
	req, _ := http.NewRequest(http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	if line, err := events.ReadString('\n'); err != nil || !strings.HasPrefix(line, ":") {
		t.Fatalf("stream starts with %q, %v", line, err) // the stream is open once this arrives
	}
	sc := startStdio(t, srv.MCP(), "")
	sc.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"desk","version":"1.0"}}}`)
	sc.next()
	if before := listAll(t, c); len(before) != srv.Registry().Len() {
		t.Fatalf("listed %d tools before the change, want %d", len(before), srv.Registry().Len())
	}

	if err := mcpbridge.SyntheticTools(srv.MCP(), 230); err != nil {
		t.Fatal(err)
	}
	const changed = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`
	for {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream ended before list_changed: %v", err)
		}
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			if data != changed {
				t.Fatalf("event %s, want %s", data, changed)
			}
			break
		}
	}
	if n := sc.next(); n.Method != "notifications/tools/list_changed" || n.ID != nil {
		t.Fatalf("stdio got %+v, want notifications/tools/list_changed", n)
	}
	after := listAll(t, c)
	if len(after) != 230 || after[0]["name"] != "tool-0000-"+srv.Registry().Latest()[0].Name {
		t.Fatalf("listed %d tools after the change, from %v", len(after), after[0]["name"])
	}
	sc.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var page struct{ Tools []map[string]any }
	if r := sc.next(); r.Error != nil || json.Unmarshal(r.Result, &page) != nil || len(page.Tools) != 100 {
		t.Fatalf("stdio tools/list = %.200s %+v", r.Result, r.Error)
	}
}
