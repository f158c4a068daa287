package mcpbridge_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// metaWithLevel is the _meta of a 2026-07-28 request asking for log
// messages from level on ("" asks for none).
func metaWithLevel(level string) string {
	lvl := ""
	if level != "" {
		lvl = `,"io.modelcontextprotocol/logLevel":"` + level + `"`
	}
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"levels","version":"1.0"},"io.modelcontextprotocol/clientCapabilities":{}` + lvl + `}`
}

// TestModernLogLevel checks io.modelcontextprotocol/logLevel (SEP-2575):
// a 2026-07-28 request gets notifications/message on its own response
// stream only when its _meta asks, and only at or above the level asked;
// the next request without it gets none (the level is the request's, not
// a session's), over HTTP and over stdio.
func TestModernLogLevel(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	c := newClient(t, srv.HTTP)
	call := func(level string) (logs []json.RawMessage, last response) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},` + metaWithLevel(level) + `}}`
		resp, b := c.post(body, modernHeaders("tools/call", "get-sync-status"))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("level %q: HTTP %d %s", level, resp.StatusCode, b)
		}
		msgs := decodeMessages(t, resp.Header.Get("Content-Type"), b)
		for _, m := range msgs[:len(msgs)-1] {
			if m.Method != "notifications/message" {
				t.Fatalf("level %q: unexpected %s", level, m.Method)
			}
			logs = append(logs, m.Params)
		}
		return logs, msgs[len(msgs)-1]
	}
	logs, last := call("debug")
	if len(logs) != 1 || !strings.Contains(string(logs[0]), `"level":"debug"`) || !strings.Contains(string(logs[0]), `"tool":"get-sync-status"`) || last.Error != nil {
		t.Fatalf("logLevel debug: logs %s, last %+v", logs, last)
	}
	for _, level := range []string{"", "warning", "not-a-level"} {
		if logs, last := call(level); len(logs) != 0 || last.Error != nil || string(last.ID) != "1" {
			t.Fatalf("logLevel %q: logs %s, last %+v", level, logs, last)
		}
	}

	sc := startStdio(t, srv.MCP(), "")
	sc.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},` + metaWithLevel("debug") + `}}`)
	if m := sc.next(); m.Method != "notifications/message" || !strings.Contains(string(m.Params), `"level":"debug"`) {
		t.Fatalf("stdio logLevel debug: first message %+v", m)
	}
	if r := sc.next(); string(r.ID) != "2" || r.Error != nil {
		t.Fatalf("stdio: %+v", r)
	}
	sc.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},` + metaWithLevel("") + `}}`)
	if r := sc.next(); string(r.ID) != "3" || r.Method != "" {
		t.Fatalf("stdio without logLevel: first message %+v, want the response", r)
	}
}
