package toolsvc

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		name       string
		tool       string
		method     string
		restMethod string
		restPath   string
		wantErr    error
	}{
		{name: "get route", tool: "get-sync-status", method: "/toolsvc.sync.v1.SyncService/GetSyncStatus", restMethod: http.MethodGet, restPath: "/v1/sync/status"},
		{name: "post route", tool: "search-memories", method: "/toolsvc.memory.v1.MemoryService/SearchMemories", restMethod: http.MethodPost, restPath: "/v1/memories:search"},
		{name: "unknown", tool: "make-coffee", wantErr: ErrUnknownTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(tt.tool)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got.FullMethod != tt.method || got.RESTMethod != tt.restMethod || got.RESTPath != tt.restPath || got.Input == nil || got.Output == nil {
				t.Errorf("Resolve = %+v", got)
			}
		})
	}
}

func TestRESTCall(t *testing.T) {
	status, _ := Resolve("get-sync-status")
	search, _ := Resolve("search-memories")
	tests := []struct {
		name    string
		tool    Tool
		args    string
		method  string
		path    string
		body    string
		wantErr bool
	}{
		{name: "get without arguments", tool: status, args: `{}`, method: "GET", path: "/v1/sync/status"},
		{name: "get with arguments uses the seed route", tool: status, args: `{"x":1}`, method: "POST", path: "/api/mcp/tool/call", body: `{"input":{"x":1},"toolName":"get-sync-status"}`},
		{name: "post body", tool: search, args: `{"query":"a"}`, method: "POST", path: "/v1/memories:search", body: `{"query":"a"}`},
		{name: "not an object", tool: search, args: `[1]`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, u, bodies, err := tt.tool.restCall("http://127.0.0.1:1/", []json.RawMessage{json.RawMessage(tt.args)})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				return
			}
			if m != tt.method || u != "http://127.0.0.1:1"+tt.path {
				t.Errorf("route = %s %s", m, u)
			}
			if tt.body != "" && (len(bodies) != 1 || string(bodies[0]) != tt.body) {
				t.Errorf("bodies = %q", bodies)
			}
		})
	}
}

func TestTargetRefusesRemoteAndUnknown(t *testing.T) {
	tool, _ := Resolve("get-sync-status")
	tests := []struct {
		name      string
		transport string
		ep        Endpoint
	}{
		{name: "remote grpc", transport: GRPC, ep: Endpoint{GRPCAddr: "192.0.2.1:9090"}},
		{name: "remote http", transport: MCPStateful, ep: Endpoint{HTTPBase: "http://192.0.2.1:8080"}},
		{name: "unknown transport", transport: "carrier-pigeon", ep: Endpoint{HTTPBase: "http://127.0.0.1:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := tool.Target(tt.transport, tt.ep, nil, 1); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestWriteKeys(t *testing.T) {
	k, err := WriteKeys(t.TempDir(), "bench", 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(k.File)
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Values) != 3 || strings.Count(string(b), "key_sha256") != 3 || strings.Contains(string(b), k.Values[0]) {
		t.Errorf("auth file holds %d hashed keys or a plain key:\n%s", strings.Count(string(b), "key_sha256"), b)
	}
	if !strings.Contains(string(b), hashKey(k.Values[2])) {
		t.Error("key 2's hash missing")
	}
}
