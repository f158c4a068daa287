package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// unstable are result members that differ between any two calls: times,
// durations, trace and correlation ids, and the transport itself.
var unstable = []string{
	"time", "timestamp", "generatedAt", "processingTime", "executionTimeMs", "latencyMs", "durationMs",
	"avgSyncDurationMs", "lastSyncAt", "createdAt", "updatedAt", "traceId", "correlationId", "transport",
}

var (
	reMemoryID  = regexp.MustCompile(`mem_[0-9a-f]{32}`)
	reTimestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
)

// stable removes what legitimately differs between two identical calls on
// two servers: unstable members, generated ids and timestamps in text.
func stable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if !slices.Contains(unstable, k) {
				out[k] = stable(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stable(e)
		}
		return out
	case json.Number:
		f, _ := x.Float64()
		return f
	case string:
		return reTimestamp.ReplaceAllString(reMemoryID.ReplaceAllString(x, "mem_ID"), "TIME")
	default:
		return v
	}
}

// parityStep is one call, the same on both transports.
type parityStep struct {
	tool   string
	params string // JSON; "$ID" is replaced by the memory added first
}

// callGRPC calls the tool's typed RPC over gRPC and returns the response
// as protojson.
func callGRPC(tb testing.TB, ts *testserver.Server, t *registry.Tool, params []byte) (map[string]any, string) {
	tb.Helper()
	req := t.Input.New().Interface()
	if err := protojson.Unmarshal(params, req); err != nil {
		tb.Fatalf("%s params: %v", t.Name, err)
	}
	resp := t.Output.New().Interface()
	if err := ts.Conn.Invoke(context.Background(), t.FullMethod, req, resp); err != nil {
		tb.Fatalf("gRPC %s: %v", t.Name, err)
	}
	b, err := protojson.MarshalOptions{EmitDefaultValues: true}.Marshal(resp)
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatal(err)
	}
	return m, string(b)
}

// callREST calls the tool's own REST route (its HTTP rule): path
// parameters from params, then a JSON body for POST or query parameters
// for GET.
func callREST(tb testing.TB, ts *testserver.Server, t *registry.Tool, params []byte) (map[string]any, string) {
	tb.Helper()
	var p map[string]any
	if err := json.Unmarshal(params, &p); err != nil {
		tb.Fatal(err)
	}
	route := t.Def.GetHttp()
	path := regexp.MustCompile(`\{([a-z_]+)\}`).ReplaceAllStringFunc(route.GetPath(), func(v string) string {
		name := v[1 : len(v)-1]
		camel := regexp.MustCompile(`_([a-z])`).ReplaceAllStringFunc(name, func(s string) string { return strings.ToUpper(s[1:]) })
		val := fmt.Sprint(p[camel])
		delete(p, camel)
		return url.PathEscape(val)
	})
	req := request{Method: route.GetMethod(), URL: ts.HTTP + path}
	switch route.GetMethod() {
	case http.MethodPost:
		b, _ := json.Marshal(p)
		req.Body = string(b)
	default:
		q := url.Values{}
		for k, v := range p {
			if list, ok := v.([]any); ok {
				for _, e := range list {
					q.Add(k, fmt.Sprint(e))
				}
				continue
			}
			q.Set(k, fmt.Sprint(v))
		}
		if len(q) > 0 {
			req.URL += "?" + q.Encode()
		}
	}
	resp := do(tb, req)
	if resp.Status != http.StatusOK {
		tb.Fatalf("REST %s %s: %d %s", req.Method, req.URL, resp.Status, resp.Body)
	}
	return resp.JSON(tb), string(resp.Body)
}

// TestParity runs the same sequence of calls of every tool on two fresh
// servers, one over gRPC and one over REST, and compares data and hints.
func TestParity(t *testing.T) {
	grpcSrv, restSrv := newServer(t, nil), newServer(t, nil)
	steps := []parityStep{
		{tool: "add-memory", params: `{"content":"The billing service stores invoices in PostgreSQL.","tags":["database","billing"]}`},
		{tool: "search-memories", params: `{"query":"billing invoices PostgreSQL","threshold":0.1}`},
		{tool: "summarize-memories", params: `{"query":"billing invoices","threshold":0.1}`},
		{tool: "query-knowledge", params: `{"query":"database","limit":5}`},
		{tool: "show-knowledge", params: `{"id":"adr-042-database-selection","includeHistory":true}`},
		{tool: "check-knowledge", params: `{"dependencies":[{"name":"go.mongodb.org/mongo-driver"}],"files":[{"path":"main.go","content":"package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"x\") }\n"}]}`},
		{tool: "sync-knowledge", params: `{}`},
		{tool: "get-sync-status", params: `{}`},
		{tool: "delete-memory", params: `{"memoryId":"$ID"}`},
		{tool: "list-audit-events", params: `{"decision":"allow"}`},
	}
	covered := map[string]bool{}
	ids := map[*testserver.Server]string{}
	for _, step := range steps {
		tool, err := grpcSrv.Registry().Get(step.tool, "")
		if err != nil {
			t.Fatal(err)
		}
		covered[tool.Name] = true
		if step.tool == "list-audit-events" {
			// Both trails must hold every earlier call before they are compared.
			waitAudit(t, grpcSrv, "", len(covered)-1)
			waitAudit(t, restSrv, "", len(covered)-1)
		}
		t.Run(step.tool, func(t *testing.T) {
			viaGRPC, rawGRPC := callGRPC(t, grpcSrv, tool, []byte(strings.ReplaceAll(step.params, "$ID", ids[grpcSrv])))
			viaREST, rawREST := callREST(t, restSrv, tool, []byte(strings.ReplaceAll(step.params, "$ID", ids[restSrv])))
			if step.tool == "add-memory" {
				for srv, m := range map[*testserver.Server]map[string]any{grpcSrv: viaGRPC, restSrv: viaREST} {
					data, _ := m["data"].(map[string]any)
					ids[srv], _ = data["memoryId"].(string)
				}
			}
			for _, member := range []string{"data", "agentHints"} {
				g, r := stable(viaGRPC[member]), stable(viaREST[member])
				if g == nil || r == nil {
					t.Fatalf("%s missing:\ngRPC %s\nREST %s", member, rawGRPC, rawREST)
				}
				if d := differences(member, g, r); len(d) > 0 {
					t.Errorf("gRPC and REST differ:\n%s", strings.Join(d, "\n"))
				}
			}
		})
	}
	for _, tool := range grpcSrv.Registry().Latest() {
		if !covered[tool.Name] {
			t.Errorf("tool %s has no parity step", tool.Name)
		}
	}
}

// differences lists the paths where a and b differ, with both values.
func differences(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		var out []string
		for k := range keys {
			out = append(out, differences(path+"."+k, am[k], bm[k])...)
		}
		sort.Strings(out)
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, differences(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	return []string{fmt.Sprintf("  %s: gRPC %s, REST %s", path, aj, bj)}
}
