package gateway_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// resultOf checks a tool result body {data, agentHints, metadata} and
// returns its data.
func resultOf(tb testing.TB, m map[string]any) map[string]any {
	tb.Helper()
	data, ok := m["data"].(map[string]any)
	if !ok {
		tb.Fatalf("result has no data object: %v", m)
	}
	hints, ok := m["agentHints"].(map[string]any)
	if !ok {
		tb.Fatalf("result has no agentHints: %v", m)
	}
	// Empty lists are present, never omitted.
	if _, ok := hints["warnings"].([]any); !ok {
		tb.Errorf("agentHints.warnings is missing: %v", hints)
	}
	if _, ok := m["metadata"].(map[string]any); !ok {
		tb.Fatalf("result has no metadata: %v", m)
	}
	return data
}

func toolNames(tb testing.TB, list []any) []string {
	tb.Helper()
	var names []string
	for _, t := range list {
		def, _ := t.(map[string]any)
		name, _ := def["name"].(string)
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func TestToolServiceRoutes(t *testing.T) {
	ts := newServer(t, nil)

	t.Run("GET /v1/tools lists every tool", func(t *testing.T) {
		resp := do(t, request{URL: ts.HTTP + "/v1/tools"})
		if resp.Status != http.StatusOK {
			t.Fatalf("status = %d: %s", resp.Status, resp.Body)
		}
		tools, _ := resp.JSON(t)["tools"].([]any)
		if got, want := len(tools), ts.Registry().Len(); got != want {
			t.Fatalf("%d tools, want %d", got, want)
		}
	})
	t.Run("GET /v1/tools filters by category", func(t *testing.T) {
		resp := do(t, request{URL: ts.HTTP + "/v1/tools?category=mutation"})
		tools, _ := resp.JSON(t)["tools"].([]any)
		if len(tools) == 0 {
			t.Fatalf("no mutation tools: %s", resp.Body)
		}
		for _, tool := range tools {
			if def, _ := tool.(map[string]any); def["category"] != "mutation" {
				t.Errorf("tool %v listed under category mutation", def["name"])
			}
		}
	})
	t.Run("GET /v1/tools/{name}", func(t *testing.T) {
		resp := do(t, request{URL: ts.HTTP + "/v1/tools/search-memories"})
		if resp.Status != http.StatusOK {
			t.Fatalf("status = %d: %s", resp.Status, resp.Body)
		}
		tool, _ := resp.JSON(t)["tool"].(map[string]any)
		if tool["name"] != "search-memories" || tool["inputSchema"] == nil {
			t.Fatalf("tool = %v", tool)
		}
	})
	t.Run("POST /v1/tools/{name}:call", func(t *testing.T) {
		resp := do(t, request{Method: "POST", URL: ts.HTTP + "/v1/tools/query-knowledge:call", Body: `{"query":"database"}`})
		if resp.Status != http.StatusOK {
			t.Fatalf("status = %d: %s", resp.Status, resp.Body)
		}
		data := resultOf(t, resp.JSON(t))
		if items, _ := data["items"].([]any); len(items) == 0 {
			t.Errorf("no knowledge items for database: %v", data)
		}
	})
}

func TestTypedRoutes(t *testing.T) {
	ts := newServer(t, nil)
	add := do(t, request{Method: "POST", URL: ts.HTTP + "/v1/memories",
		Body: `{"content":"The team chose PostgreSQL for the billing service.","tags":["database"]}`})
	if add.Status != http.StatusOK {
		t.Fatalf("add-memory: %d %s", add.Status, add.Body)
	}
	id, _ := resultOf(t, add.JSON(t))["memoryId"].(string)
	if !strings.HasPrefix(id, "mem_") {
		t.Fatalf("memoryId = %q", id)
	}
	for _, tc := range []struct {
		name string
		req  request
	}{
		{name: "search-memories", req: request{Method: "POST", URL: "/v1/memories:search", Body: `{"query":"PostgreSQL billing","threshold":0.1}`}},
		{name: "summarize-memories", req: request{Method: "POST", URL: "/v1/memories:summarize", Body: `{"query":"PostgreSQL billing","threshold":0.1}`}},
		{name: "query-knowledge by POST", req: request{Method: "POST", URL: "/v1/knowledge:query", Body: `{"query":"database","limit":5}`}},
		{name: "query-knowledge by GET", req: request{URL: "/v1/knowledge?query=database&limit=5&tags=database"}},
		{name: "query-knowledge by GET with proto names", req: request{URL: "/v1/knowledge?query=database&status=accepted&status=superseded"}},
		{name: "show-knowledge", req: request{URL: "/v1/knowledge/adr-042-database-selection?includeHistory=true"}},
		{name: "check-knowledge", req: request{Method: "POST", URL: "/v1/knowledge:check", Body: `{"dependencies":[{"name":"go.mongodb.org/mongo-driver"}]}`}},
		{name: "sync-knowledge", req: request{Method: "POST", URL: "/v1/sync", Body: `{}`}},
		{name: "sync-knowledge without a body", req: request{Method: "POST", URL: "/v1/sync"}},
		{name: "get-sync-status", req: request{URL: "/v1/sync/status"}},
		{name: "list-audit-events", req: request{URL: "/v1/audit/events?decision=allow&page.limit=5"}},
		{name: "delete-memory", req: request{Method: "DELETE", URL: "/v1/memories/" + id}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.URL = ts.HTTP + tc.req.URL
			resp := do(t, tc.req)
			if resp.Status != http.StatusOK {
				t.Fatalf("status = %d: %s", resp.Status, resp.Body)
			}
			resultOf(t, resp.JSON(t))
		})
	}
}

func TestSeedRoutes(t *testing.T) {
	ts := newServer(t, withAuth(t))

	t.Run("health", func(t *testing.T) {
		resp := do(t, request{URL: ts.HTTP + "/api/mcp/health"})
		m := resp.JSON(t)
		if resp.Status != http.StatusOK || m["status"] != "ok" {
			t.Fatalf("status %d, body %s", resp.Status, resp.Body)
		}
		ts, _ := m["timestamp"].(string)
		if _, err := time.Parse(time.RFC3339, ts); err != nil {
			t.Errorf("timestamp %q: %v", ts, err)
		}
	})
	t.Run("tools are filtered by permission", func(t *testing.T) {
		all := do(t, request{URL: ts.HTTP + "/api/mcp/tools", Header: bearer(keyFull)})
		mem := do(t, request{URL: ts.HTTP + "/api/mcp/tools", Header: bearer(keyMemory)})
		allTools, _ := all.JSON(t)["tools"].([]any)
		memTools, _ := mem.JSON(t)["tools"].([]any)
		if len(allTools) != ts.Registry().Len() {
			t.Errorf("full key sees %d tools, want %d", len(allTools), ts.Registry().Len())
		}
		want := []string{"add-memory", "delete-memory", "search-memories", "summarize-memories"}
		if got := toolNames(t, memTools); !slices.Equal(got, want) {
			t.Errorf("memory key sees %v, want %v", got, want)
		}
		// The same filter as /v1/tools.
		v1 := do(t, request{URL: ts.HTTP + "/v1/tools", Header: bearer(keyMemory)})
		v1Tools, _ := v1.JSON(t)["tools"].([]any)
		if got := toolNames(t, v1Tools); !slices.Equal(got, want) {
			t.Errorf("/v1/tools for the memory key: %v, want %v", got, want)
		}
	})
	for _, tc := range []struct{ name, body string }{
		{name: "call with input", body: `{"toolName":"add-memory","input":{"content":"Seed 003 calls work with input."}}`},
		{name: "call with arguments", body: `{"toolName":"add-memory","arguments":{"content":"Seed 003 calls work with arguments."}}`},
		{name: "call with a version", body: `{"toolName":"add-memory","version":"1.0.0","input":{"content":"Seed 003 calls name a version."}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, request{Method: "POST", URL: ts.HTTP + "/api/mcp/tool/call", Body: tc.body, Header: bearer(keyFull)})
			if resp.Status != http.StatusOK {
				t.Fatalf("status = %d: %s", resp.Status, resp.Body)
			}
			result, ok := resp.JSON(t)["result"].(map[string]any)
			if !ok {
				t.Fatalf("no result: %s", resp.Body)
			}
			if data := resultOf(t, result); data["success"] != true {
				t.Errorf("data = %v", data)
			}
		})
	}
}

// TestHeadersForwarded checks the allowlisted headers reach the chain: the
// agent id and correlation id sent over REST are in the audit trail.
func TestHeadersForwarded(t *testing.T) {
	ts := newServer(t, nil)
	resp := do(t, request{Method: "POST", URL: ts.HTTP + "/v1/knowledge:query", Body: `{"query":"database"}`,
		Header: map[string]string{"X-Agent-Id": "rest-agent", "X-Correlation-Id": "corr-rest-1",
			"Traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "Cookie": "session=secret"}})
	if resp.Status != http.StatusOK {
		t.Fatalf("status = %d: %s", resp.Status, resp.Body)
	}
	meta, _ := resp.JSON(t)["metadata"].(map[string]any)
	if meta["correlationId"] != "corr-rest-1" || meta["traceId"] != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("metadata = %v, want the correlation and trace ids sent", meta)
	}
	waitAudit(t, ts, "query-knowledge", 1)
	events := do(t, request{URL: ts.HTTP + "/v1/audit/events?tool=query-knowledge"})
	data := resultOf(t, events.JSON(t))
	list, _ := data["events"].([]any)
	if len(list) == 0 {
		t.Fatalf("no audit event: %s", events.Body)
	}
	ev, _ := json.Marshal(list[0])
	for _, want := range []string{`"transport":"rest"`, `"correlationId":"corr-rest-1"`} {
		if !strings.Contains(string(ev), want) {
			t.Errorf("audit event %s lacks %s", ev, want)
		}
	}
}

func TestOpenAPIRoute(t *testing.T) {
	ts := newServer(t, withAuth(t))
	// The document is public: no token needed.
	resp := do(t, request{URL: ts.HTTP + "/openapi.json"})
	if resp.Status != http.StatusOK {
		t.Fatalf("status = %d: %s", resp.Status, resp.Body)
	}
	if doc := resp.JSON(t); doc["swagger"] != "2.0" {
		t.Errorf("swagger = %v", doc["swagger"])
	}
	head := do(t, request{Method: "HEAD", URL: ts.HTTP + "/openapi.json"})
	if head.Status != http.StatusOK || len(head.Body) != 0 {
		t.Errorf("HEAD: status %d, %d bytes", head.Status, len(head.Body))
	}
}
