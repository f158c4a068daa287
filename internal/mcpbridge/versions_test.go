package mcpbridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testproto"
)

// widgetServices serves the built-in tools and get-widget in versions
// 1.0.0 and 2.0.0 side by side (testdata/pinned.proto); each
// version answers with the method that served it.
func widgetServices(t *testing.T) server.ServicesFunc {
	return echoServices(t, "pinned.proto", "WidgetService", "GetWidget", "GetWidgetV2", "FindWidget")
}

// echoServices serves the built-in tools and the test-only service of
// testdata/file whose methods each answer with the request's id and the
// method that served it (data.served_by), with hints.
func echoServices(t *testing.T, file, service string, methods ...string) server.ServicesFunc {
	c := testproto.Compile(t, "testdata", file)
	serve := func(method string) testproto.Handler {
		return func(_ context.Context, req, resp *dynamicpb.Message) error {
			data := dynamicpb.NewMessage(resp.Descriptor().Fields().ByName("data").Message())
			data.Set(data.Descriptor().Fields().ByName("id"), req.Get(req.Descriptor().Fields().ByName("id")))
			data.Set(data.Descriptor().Fields().ByName("served_by"), protoreflect.ValueOfString(method))
			resp.Set(resp.Descriptor().Fields().ByName("data"), protoreflect.ValueOfMessage(data))
			testproto.SetMessage(resp, "agent_hints", hints.New().Evidence(hints.Evidence{Name: "test", Value: 1, Weight: 1}).Quality(hints.QualityHigh).Build("test"))
			return nil
		}
	}
	handlers := map[string]testproto.Handler{}
	for _, m := range methods {
		handlers[m] = serve(m)
	}
	desc := c.Service(service, handlers)
	return func(ctx context.Context, d server.Deps) ([]registry.Service, func(), error) {
		svcs, cleanup, err := server.Builtin(ctx, d)
		return append(svcs, registry.Service{Desc: desc, Files: c.Files}), cleanup, err
	}
}

// TestPinnedVersionOnEveryTransport: a tool's versions stand side by side
// and every transport reaches each of them (docs/CONTRACTS.md, "Calling a
// version"): MCP tools/call with _meta "toolsvc/version" in both
// revisions, gRPC ToolService.CallTool with version, REST with ?version=.
// Without a version each answers with the highest; an unknown version is
// NOT_FOUND naming the versions there are.
func TestPinnedVersionOnEveryTransport(t *testing.T) {
	srv := newAuthServerWith(t, widgetServices(t), nil)
	served := map[string]string{"": "GetWidgetV2", "1.0.0": "GetWidget", "2.0.0": "GetWidgetV2", "=1.0.0": "GetWidget", "=2.0.0": "GetWidgetV2"}

	mcpCall := func(t *testing.T, modern bool, version string) map[string]any {
		t.Helper()
		c := newClient(t, srv.HTTP)
		c.header.Set("Authorization", "Bearer "+keyAll)
		meta := map[string]any{}
		var headers http.Header
		if modern {
			meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
			meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "versions-test", "version": "1.0"}
			meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
			headers = modernHeaders("tools/call", "get-widget")
		} else {
			c.initialize("versions-test")
		}
		if version != "" {
			meta["toolsvc/version"] = version
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
			"params": map[string]any{"name": "get-widget", "arguments": map[string]any{"id": "w1"}, "_meta": meta}})
		resp, b := c.post(string(body), headers)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/call: HTTP %d %s", resp.StatusCode, b)
		}
		msgs := decodeMessages(t, resp.Header.Get("Content-Type"), b)
		r := msgs[len(msgs)-1]
		if r.Error != nil {
			t.Fatalf("tools/call: error %d %s", r.Error.Code, r.Error.Message)
		}
		var res struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatal(err)
		}
		return res.StructuredContent
	}
	grpcCall := func(t *testing.T, version string) map[string]any {
		t.Helper()
		args, _ := structpb.NewStruct(map[string]any{"id": "w1"})
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+keyAll)
		out, err := srv.Tools().CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "get-widget", Version: version, Arguments: args})
		if err != nil {
			return map[string]any{"code": errCode(err)}
		}
		return map[string]any{"data": out.GetData().AsMap(), "metadata": map[string]any{"toolVersion": out.GetMetadata().GetToolVersion()}}
	}
	restCall := func(t *testing.T, version string) map[string]any {
		t.Helper()
		url := srv.HTTP + "/v1/tools/get-widget:call"
		if version != "" {
			url += "?version=" + version
		}
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(`{"id":"w1"}`)))
		req.Header.Set("Authorization", "Bearer "+keyAll)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("REST: HTTP %d %s", resp.StatusCode, b)
		}
		return out
	}

	// A pin is answered by the highest version of its major ("=" pins
	// exactly; in a query, ?version==1.0.0).
	for _, version := range []string{"", "1.0.0", "2.0.0", "=1.0.0", "=2.0.0"} {
		answers := map[string]map[string]any{
			"MCP 2025-11-25": mcpCall(t, false, version),
			"MCP 2026-07-28": mcpCall(t, true, version),
			"gRPC":           grpcCall(t, version),
			"REST":           restCall(t, version),
		}
		for transport, got := range answers {
			data, _ := got["data"].(map[string]any)
			md, _ := got["metadata"].(map[string]any)
			wantVersion := strings.TrimPrefix(version, "=")
			if wantVersion == "" {
				wantVersion = "2.0.0"
			}
			if data["servedBy"] != served[version] || md["toolVersion"] != wantVersion {
				t.Errorf("%s, version %q: served by %v at %v, want %s at %s (%v)", transport, version, data["servedBy"], md["toolVersion"], served[version], wantVersion, got)
			}
		}
	}

	// tools/list describes the highest version and names every version
	// served, so an agent can discover what to pin.
	c := newClient(t, srv.HTTP)
	c.header.Set("Authorization", "Bearer "+keyAll)
	c.initialize("versions-test")
	var list struct {
		Tools []struct {
			Name string                     `json:"name"`
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"tools"`
	}
	if r := c.call("tools/list", map[string]any{}); r.Error != nil || json.Unmarshal(r.Result, &list) != nil {
		t.Fatalf("tools/list: %v", r.Error)
	}
	for _, tool := range list.Tools {
		if tool.Name == "get-widget" {
			if v, vs := string(tool.Meta["version"]), string(tool.Meta["toolsvc/versions"]); v != `"2.0.0"` || vs != `["1.0.0","2.0.0"]` {
				t.Errorf("tools/list get-widget: version %s, versions %s; want 2.0.0 and both", v, vs)
			}
		}
	}

	// A version that does not exist: NOT_FOUND everywhere, naming the versions.
	for transport, got := range map[string]map[string]any{
		"MCP 2025-11-25": mcpCall(t, false, "9.9.9"),
		"MCP 2026-07-28": mcpCall(t, true, "9.9.9"),
		"gRPC":           grpcCall(t, "9.9.9"),
		"REST":           restCall(t, "9.9.9"),
	} {
		if code := fmtCode(got); code != "NOT_FOUND" {
			t.Errorf("%s, version 9.9.9: %v, want NOT_FOUND", transport, got)
		}
		if transport != "gRPC" && !strings.Contains(fmtJSON(got), "1.0.0") {
			t.Errorf("%s, version 9.9.9: %v does not name the versions there are", transport, got)
		}
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// fmtCode is the error code of an answer: a ToolError ({code}) or a
// result carrying one under error.
func fmtCode(v map[string]any) string {
	if c, ok := v["code"].(string); ok {
		return c
	}
	if e, ok := v["error"].(map[string]any); ok {
		c, _ := e["code"].(string)
		return c
	}
	return ""
}

// errCode is the ToolError code of a gRPC error.
func errCode(err error) string {
	st, _ := status.FromError(err)
	return toolerr.FromStatus(st).GetCode()
}
