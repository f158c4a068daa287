package e2e

import (
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

var (
	memID     = regexp.MustCompile(`mem_[0-9a-f]{32}`)
	timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	// volatile keys differ between two runs of the same calls.
	volatile = map[string]bool{
		"durationMs": true, "executionTimeMs": true, "processingTime": true, "generatedAt": true,
		"timeSinceSync": true, "avgSyncDurationMs": true, "traceId": true, "correlationId": true,
		"latencyMs": true, "time": true,
	}
)

// normalize drops volatile keys and masks ids and timestamps.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			if !volatile[k] {
				out[k] = normalize(val)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = normalize(x[i])
		}
		return out
	case string:
		return timestamp.ReplaceAllString(memID.ReplaceAllString(x, "mem_*"), "<time>")
	default:
		return v
	}
}

// TestTransportsAgree runs the same sequence of calls on three fresh
// servers, one per transport, and requires the same data, agent hints and
// errors. (list-audit-events is left out: its records name the transport,
// and they are written asynchronously.)
func TestTransportsAgree(t *testing.T) {
	type step struct {
		tool string
		args func(lastID string) map[string]any
	}
	steps := []step{
		{"add-memory", func(string) map[string]any {
			return map[string]any{"content": "The payments team deploys on Tuesdays after the change review", "tags": []any{"deploy"}}
		}},
		{"add-memory", func(string) map[string]any {
			return map[string]any{"content": "The payments team prefers PostgreSQL for ledgers", "layer": "project"}
		}},
		{"search-memories", func(string) map[string]any { return map[string]any{"query": "payments team deploys", "threshold": 0.2} }},
		{"summarize-memories", func(string) map[string]any { return map[string]any{"query": "payments team", "threshold": 0.2} }},
		{"delete-memory", func(id string) map[string]any { return map[string]any{"memoryId": id} }},
		{"delete-memory", func(id string) map[string]any { return map[string]any{"memoryId": id} }}, // now NOT_FOUND
		{"query-knowledge", func(string) map[string]any { return map[string]any{"query": "database selection"} }},
		{"show-knowledge", func(string) map[string]any {
			return map[string]any{"id": "adr-042-database-selection", "includeHistory": true}
		}},
		{"check-knowledge", func(string) map[string]any {
			return map[string]any{"dependencies": []any{map[string]any{"name": "mysql2"}}, "files": []any{map[string]any{"path": "main.go", "content": "package main\n\nfunc main() { fmt.Println(\"hi\") }\n"}}}
		}},
		{"sync-knowledge", func(string) map[string]any { return map[string]any{} }},
		{"get-sync-status", func(string) map[string]any { return map[string]any{} }},
		{"show-knowledge", func(string) map[string]any { return map[string]any{"id": "no-such-item"} }},
	}
	run := func(tr Transport) []any {
		var out []any
		lastID := ""
		for _, st := range steps {
			// The same agent on every transport (MCP would otherwise default
			// the agent id to its clientInfo, opening the agent layer).
			o, err := tr.Call(context.Background(), "", st.tool, st.args(lastID), map[string]string{"x-agent-id": "parity-agent", "x-agent-version": "1.0.0"})
			if err != nil {
				t.Fatalf("%s %s: %v", tr.Name(), st.tool, err)
			}
			if st.tool == "add-memory" && o.Code == "OK" {
				lastID = o.Result["data"].(map[string]any)["memoryId"].(string)
			}
			rec := map[string]any{"tool": st.tool, "code": o.Code}
			if o.Code == "OK" {
				rec["data"], rec["agentHints"] = o.Result["data"], o.Result["agentHints"]
			} else {
				rec["error"] = map[string]any{"code": o.Error["code"], "message": o.Error["message"], "retryable": o.Error["retryable"], "kind": o.Error["kind"]}
			}
			out = append(out, normalize(rec))
		}
		return out
	}
	want := run(GRPC{S: testserver.New(t, testserver.Options{})})
	for _, tr := range []Transport{REST{S: testserver.New(t, testserver.Options{})}, MCP{S: testserver.New(t, testserver.Options{})}} {
		got := run(tr)
		for i := range want {
			if !reflect.DeepEqual(want[i], got[i]) {
				w, _ := json.MarshalIndent(want[i], "", " ")
				g, _ := json.MarshalIndent(got[i], "", " ")
				t.Errorf("%s step %d (%s) differs from grpc:\ngrpc: %s\n%s: %s", tr.Name(), i, steps[i].tool, w, tr.Name(), g)
			}
		}
	}
}
