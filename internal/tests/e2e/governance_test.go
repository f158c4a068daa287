package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// Keys of the governance auth file.
const (
	govRoleKey  = "gov-key-role-memory-reader-01"
	govBoundKey = "gov-key-bound-to-sync-set-002"
	govFullKey  = "gov-key-operator-everything-3"
)

// governanceFile is an auth file with roles and tool sets
// (docs/OPERATIONS.md, "Governance"). roleKeyRoles are the roles of the
// role key: revoking its role is writing the file again without it.
func governanceFile(roleKeyRoles string) string {
	return `tool_sets:
  - name: memory-read
    description: Reading memories
    include:
      - tag: memory
        category: query
      - tool: summarize-memories
  - name: sync
    include:
      - tag: sync
        version: "1.x"
    exclude:
      - tool: sync-knowledge
roles:
  - name: memory-reader
    permissions: ["memory:read"]
  - name: memory-writer
    permissions: ["memory:read", "memory:write"]
  - name: sync-only
    permissions: ["sync:*"]
    tool_sets: [sync]
  - name: operator
    permissions: ["policy:read", "audit:read"]
api_keys:
  - key: "` + govRoleKey + `"
    subject: roley
    tenant: acme
    permissions: ["sync:read"]
    roles: [` + roleKeyRoles + `]
  - key: "` + govBoundKey + `"
    subject: bound
    tenant: acme
    roles: [sync-only]
  - key: "` + govFullKey + `"
    subject: full
    tenant: acme
    permissions: ["*"]
    roles: [operator]
`
}

func governanceServer(t *testing.T, content string) *testserver.Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return testserver.New(t, testserver.Options{Configure: func(c *server.Config) { c.AuthFile = path }})
}

// TestRolesGrantedAndRevoked: a role's grants reach the key on gRPC,
// REST and MCP (both revisions); the same key after the role is removed
// from its entry (a new auth file) sees the tool no more, which answers
// as an unknown tool, and the audit record names the rule.
func TestRolesGrantedAndRevoked(t *testing.T) {
	ctx := t.Context()
	srv := governanceServer(t, governanceFile("memory-reader"))
	args := map[string]any{"query": "anything"}
	for _, tr := range []Transport{GRPC{S: srv}, REST{S: srv}, MCP{S: srv}, modernMCP{s: srv}} {
		out, err := tr.Call(ctx, govRoleKey, "search-memories", args, nil)
		if err != nil || out.Code != "OK" {
			t.Errorf("%s: search-memories through the role: %v %+v", tr.Name(), err, out)
		}
		out, err = tr.Call(ctx, govRoleKey, "add-memory", map[string]any{"content": "x"}, nil)
		if err != nil || out.Code != "NOT_FOUND" {
			t.Errorf("%s: add-memory without memory:write: %v %+v, want NOT_FOUND", tr.Name(), err, out)
		}
	}
	if got := listNames(t, srv, govRoleKey, ""); !slices.Contains(got, "search-memories") || slices.Contains(got, "add-memory") {
		t.Errorf("role key lists %v", got)
	}
	waitAuditReason(t, srv, "add-memory", "roley", "permission: missing memory:write")

	revoked := governanceServer(t, governanceFile(""))
	for _, tr := range []Transport{GRPC{S: revoked}, REST{S: revoked}, MCP{S: revoked}, modernMCP{s: revoked}} {
		out, err := tr.Call(ctx, govRoleKey, "search-memories", args, nil)
		if err != nil || out.Code != "NOT_FOUND" {
			t.Errorf("%s: search-memories after the role was revoked: %v %+v, want NOT_FOUND", tr.Name(), err, out)
		}
		out, err = tr.Call(ctx, govRoleKey, "get-sync-status", map[string]any{}, nil)
		if err != nil || out.Code != "OK" {
			t.Errorf("%s: a direct permission stays: %v %+v", tr.Name(), err, out)
		}
	}
	if got := listNames(t, revoked, govRoleKey, ""); slices.Contains(got, "search-memories") {
		t.Errorf("revoked role key still lists search-memories: %v", got)
	}
}

// TestToolSets: a set chosen on every transport (the header on gRPC and
// REST, the /mcp/sets/{set} endpoint on MCP of both revisions) lists and
// calls its tools only; a tool outside it answers as an unknown tool; a
// key bound to a set sees that set only and cannot choose another; an
// unknown set is not found; a session of a set's endpoint is not one of
// /mcp.
func TestToolSets(t *testing.T) {
	ctx := t.Context()
	srv := governanceServer(t, governanceFile("memory-reader"))
	want := []string{"search-memories", "summarize-memories"}
	set := map[string]string{"x-toolsvc-tool-set": "memory-read"}

	if got := listNames(t, srv, govFullKey, "memory-read"); !slices.Equal(sorted(got), want) {
		t.Errorf("gRPC ListTools in memory-read: %v, want %v", got, want)
	}
	if got := restList(t, srv, govFullKey, "memory-read"); !slices.Equal(sorted(got), want) {
		t.Errorf("REST GET /v1/tools in memory-read: %v, want %v", got, want)
	}
	setMCP := MCP{S: srv, Path: "/mcp/sets/memory-read"}
	raw, rerr, err := setMCP.Protocol(ctx, govFullKey, "tools/list", map[string]any{})
	if err != nil || rerr != nil {
		t.Fatalf("tools/list on the set's endpoint: %v %v", err, rerr)
	}
	if got := mcpNames(t, raw); !slices.Equal(sorted(got), want) {
		t.Errorf("MCP 2025 tools/list at /mcp/sets/memory-read: %v, want %v", got, want)
	}
	modern := modernMCP{s: srv, path: "/mcp/sets/memory-read"}
	if got := modern.list(t, govFullKey); !slices.Equal(sorted(got), want) {
		t.Errorf("MCP 2026 tools/list at /mcp/sets/memory-read: %v, want %v", got, want)
	}
	if got := listNames(t, srv, govFullKey, ""); len(got) <= len(want) {
		t.Errorf("without a set the full key lists %v", got)
	}

	for _, tc := range []struct {
		tr      Transport
		headers map[string]string
	}{
		{GRPC{S: srv}, set}, {REST{S: srv}, set}, {setMCP, nil}, {modern, nil},
	} {
		out, err := tc.tr.Call(ctx, govFullKey, "search-memories", map[string]any{"query": "q"}, tc.headers)
		if err != nil || out.Code != "OK" {
			t.Errorf("%s: a tool of the set: %v %+v", tc.tr.Name(), err, out)
		}
		out, err = tc.tr.Call(ctx, govFullKey, "get-sync-status", map[string]any{}, tc.headers)
		if err != nil || out.Code != "NOT_FOUND" {
			t.Errorf("%s: a tool outside the set: %v %+v, want NOT_FOUND", tc.tr.Name(), err, out)
		}
	}
	waitAuditReason(t, srv, "get-sync-status", "full", `tool_set: not in tool set "memory-read"`)

	// Bound: the sync-only role binds its key to the sync set.
	if got := listNames(t, srv, govBoundKey, ""); !slices.Equal(got, []string{"get-sync-status"}) {
		t.Errorf("bound key lists %v, want [get-sync-status] (sync-knowledge is excluded)", got)
	}
	for _, tr := range []Transport{GRPC{S: srv}, REST{S: srv}, MCP{S: srv}, modernMCP{s: srv}} {
		out, err := tr.Call(ctx, govBoundKey, "sync-knowledge", map[string]any{}, nil)
		if err != nil || out.Code != "NOT_FOUND" {
			t.Errorf("%s: bound key calls an excluded tool: %v %+v, want NOT_FOUND", tr.Name(), err, out)
		}
		out, err = tr.Call(ctx, govBoundKey, "get-sync-status", map[string]any{}, map[string]string{"x-toolsvc-tool-set": "memory-read"})
		if err != nil || out.Code != "NOT_FOUND" {
			t.Errorf("%s: bound key chooses another set: %v %+v, want NOT_FOUND", tr.Name(), err, out)
		}
		out, err = tr.Call(ctx, govFullKey, "get-sync-status", map[string]any{}, map[string]string{"x-toolsvc-tool-set": "no-such-set"})
		if err != nil || out.Code != "NOT_FOUND" {
			t.Errorf("%s: an unknown set: %v %+v, want NOT_FOUND", tr.Name(), err, out)
		}
	}
	waitAuditReason(t, srv, "get-sync-status", "bound", `tool_set: tool set not bound to the credential "memory-read"`)

	resp := post(t, srv.HTTP+"/mcp/sets/no-such-set", govFullKey, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown set's endpoint: HTTP %d, want 404", resp.StatusCode)
	}
	// A session opened on the set's endpoint is not found on /mcp.
	init := post(t, srv.HTTP+"/mcp/sets/memory-read", govFullKey, "",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := init.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("no session from the set's endpoint: HTTP %d", init.StatusCode)
	}
	if r := post(t, srv.HTTP+"/mcp", govFullKey, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); r.StatusCode != http.StatusNotFound {
		t.Errorf("the set's session on /mcp: HTTP %d, want 404", r.StatusCode)
	}
	if r := post(t, srv.HTTP+"/mcp/sets/memory-read", govFullKey, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); r.StatusCode != http.StatusOK {
		t.Errorf("the set's session on its endpoint: HTTP %d, want 200", r.StatusCode)
	}
}

// TestExplain: GET /v1/policy/explain answers, for an entry of the file or
// a token's caller, whether it may call a tool and which rule refuses it
// (the reason the chain writes in the audit record), and what it sees;
// without policy:read it is 403.
func TestExplain(t *testing.T) {
	srv := governanceServer(t, governanceFile("memory-reader"))
	type answer struct {
		Callers []struct {
			Caller struct {
				Entry       string   `json:"entry"`
				Roles       []string `json:"roles"`
				Permissions []string `json:"permissions"`
				View        []string `json:"view"`
			} `json:"caller"`
			Tool *struct {
				Allowed   bool     `json:"allowed"`
				Rule      string   `json:"rule"`
				Reason    string   `json:"reason"`
				Code      string   `json:"code"`
				GrantedBy []string `json:"grantedBy"`
			} `json:"tool"`
			Sees []struct {
				Name string `json:"name"`
			} `json:"sees"`
			Budgets []any `json:"budgets"`
		} `json:"callers"`
	}
	explain := func(token, query string) (int, answer) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.HTTP+"/v1/policy/explain?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a answer
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(b, &a); err != nil || len(a.Callers) == 0 {
				t.Fatalf("explain %s: %v %s", query, err, b)
			}
		}
		return resp.StatusCode, a
	}
	for _, tc := range []struct {
		name, query, rule, reason, code string
		allowed                         bool
		grantedBy                       []string
	}{
		{name: "role grants", query: "subject=roley&tool=search-memories", allowed: true},
		{name: "missing permission", query: "subject=roley&tool=add-memory", rule: "permission", reason: "permission: missing memory:write", code: "NOT_FOUND", grantedBy: []string{"memory-writer"}},
		{name: "outside the bound set", query: "subject=bound&tool=search-memories", rule: "tool_set", reason: `tool_set: not in tool set "sync"`, code: "NOT_FOUND"},
		{name: "outside the chosen set", query: "subject=full&tool=get-sync-status&tool_set=memory-read", rule: "tool_set", reason: `tool_set: not in tool set "memory-read"`, code: "NOT_FOUND"},
		{name: "set not bound", query: "subject=bound&tool=get-sync-status&tool_set=memory-read", rule: "tool_set", reason: `tool_set: tool set not bound to the credential "memory-read"`, code: "NOT_FOUND"},
		{name: "unknown tool", query: "subject=full&tool=no-such-tool", rule: "unknown_tool", reason: "unknown_tool: no such tool", code: "NOT_FOUND"},
		{name: "token caller by roles", query: "tenant=acme&roles=memory-writer,not-a-role&tool=add-memory", allowed: true},
		{name: "token caller without", query: "tenant=acme&permissions=memory:read&tool=delete-memory", rule: "permission", reason: "permission: missing memory:delete", code: "NOT_FOUND"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, a := explain(govFullKey, tc.query)
			if st != http.StatusOK {
				t.Fatalf("HTTP %d", st)
			}
			got := a.Callers[0].Tool
			if got == nil || got.Allowed != tc.allowed || got.Rule != tc.rule || got.Reason != tc.reason || got.Code != tc.code || !slices.Equal(got.GrantedBy, tc.grantedBy) {
				t.Errorf("answer %+v, want allowed=%v rule=%q reason=%q code=%q grantedBy=%v", got, tc.allowed, tc.rule, tc.reason, tc.code, tc.grantedBy)
			}
			if a.Callers[0].Budgets == nil {
				t.Error("budgets: want [] without budgets")
			}
		})
	}
	// What a caller sees.
	_, a := explain(govFullKey, "subject=bound")
	if c := a.Callers[0]; c.Caller.Entry != "api_keys[1]" || !slices.Equal(c.Caller.Roles, []string{"sync-only"}) ||
		!slices.Equal(c.Caller.View, []string{"sync"}) || len(c.Sees) != 1 || c.Sees[0].Name != "get-sync-status" {
		t.Errorf("bound caller: %+v", c)
	}
	_, a = explain(govFullKey, "tenant=acme&roles=memory-writer,not-a-role")
	if c := a.Callers[0]; !slices.Equal(c.Caller.Roles, []string{"memory-writer"}) || len(c.Sees) != 3 {
		t.Errorf("token caller with a role: %+v (want search-memories, summarize-memories and add-memory)", c)
	}
	if st, _ := explain(govRoleKey, "subject=roley"); st != http.StatusForbidden {
		t.Errorf("without policy:read: HTTP %d, want 403", st)
	}
	if st, _ := explain(govFullKey, "subject=nobody"); st != http.StatusNotFound {
		t.Errorf("an unknown subject: HTTP %d, want 404", st)
	}
	if st, _ := explain(govFullKey, "bogus=1"); st != http.StatusBadRequest {
		t.Errorf("an unknown parameter: HTTP %d, want 400", st)
	}
}

// listNames lists the tool names token sees over gRPC, choosing set
// when not empty.
func listNames(t *testing.T, srv *testserver.Server, token, set string) []string {
	t.Helper()
	md := metadata.Pairs("authorization", "Bearer "+token)
	if set != "" {
		md.Set("x-toolsvc-tool-set", set)
	}
	resp, err := srv.Tools().ListTools(metadata.NewOutgoingContext(t.Context(), md), &toolsvcv1.ListToolsRequest{NamesOnly: true})
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var out []string
	for _, d := range resp.GetTools() {
		out = append(out, d.GetName())
	}
	return out
}

func restList(t *testing.T, srv *testserver.Server, token, set string) []string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.HTTP+"/v1/tools?namesOnly=true", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Toolsvc-Tool-Set", set)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/tools: HTTP %d %v", resp.StatusCode, err)
	}
	var out []string
	for _, d := range body.Tools {
		out = append(out, d.Name)
	}
	return out
}

func mcpNames(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("tools/list result: %v: %s", err, raw)
	}
	var out []string
	for _, d := range r.Tools {
		out = append(out, d.Name)
	}
	return out
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func post(t *testing.T, target, token, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, target, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
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

// waitAuditReason waits for the audit record of a denied call of tool by
// subject and checks its reason.
func waitAuditReason(t *testing.T, srv *testserver.Server, tool, subject, reason string) {
	t.Helper()
	md := metadata.Pairs("authorization", "Bearer "+govFullKey)
	ctx := metadata.NewOutgoingContext(t.Context(), md)
	var last []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		st, _ := structpb.NewStruct(map[string]any{"tool": tool, "subject": subject, "decision": "deny"})
		resp, err := srv.Tools().CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "list-audit-events", Arguments: st})
		if err != nil {
			s, _ := status.FromError(err)
			t.Fatalf("list-audit-events: %v", toolerr.FromStatus(s))
		}
		b, _ := json.Marshal(resp.GetData().AsMap())
		var data struct {
			Events []struct {
				Reason string `json:"reason"`
			} `json:"events"`
		}
		_ = json.Unmarshal(b, &data)
		last = last[:0]
		for _, e := range data.Events {
			if e.Reason == reason {
				return
			}
			last = append(last, e.Reason)
		}
	}
	t.Errorf("no denial of %s by %s audited with reason %q (got %q)", tool, subject, reason, last)
}

// modernMCP calls tools as a 2026-07-28 client does: each request alone,
// its revision in the header and the body's _meta.
type modernMCP struct {
	s    *testserver.Server
	path string
}

func (modernMCP) Name() string { return "mcp-2026" }

func (m modernMCP) rpc(ctx context.Context, token, method, name string, params map[string]any, headers map[string]string) (int, rpcReply, error) {
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "e2e", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	path := m.path
	if path == "" {
		path = "/mcp"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.s.HTTP+path, bytes.NewReader(raw))
	if err != nil {
		return 0, rpcReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, rpcReply{}, err
	}
	defer resp.Body.Close()
	b := replyBody(resp)
	var r rpcReply
	if len(bytes.TrimSpace(b)) > 0 {
		_ = json.Unmarshal(b, &r)
	}
	return resp.StatusCode, r, nil
}

// Call implements Transport: an unknown tool (how an invisible one
// answers) is NOT_FOUND, an isError result its ToolError's code.
func (m modernMCP) Call(ctx context.Context, token, tool string, args map[string]any, headers map[string]string) (Outcome, error) {
	if args == nil {
		args = map[string]any{}
	}
	st, r, err := m.rpc(ctx, token, "tools/call", tool, map[string]any{"name": tool, "arguments": args}, headers)
	if err != nil {
		return Outcome{}, err
	}
	if r.Error != nil {
		if strings.Contains(strings.ToLower(r.Error.Message), "unknown tool") {
			return Outcome{Code: "NOT_FOUND"}, nil
		}
		return Outcome{Code: "PROTOCOL", Error: map[string]any{"message": r.Error.Message, "http": st}}, nil
	}
	var res struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return Outcome{}, err
	}
	if res.IsError {
		code, _ := res.StructuredContent["code"].(string)
		return Outcome{Code: code, Error: res.StructuredContent}, nil
	}
	return Outcome{Code: "OK", Result: res.StructuredContent}, nil
}

func (m modernMCP) list(t *testing.T, token string) []string {
	t.Helper()
	st, r, err := m.rpc(t.Context(), token, "tools/list", "", map[string]any{}, nil)
	if err != nil || r.Error != nil || st != http.StatusOK {
		t.Fatalf("2026 tools/list: HTTP %d %v %+v", st, err, r.Error)
	}
	return mcpNames(t, r.Result)
}
