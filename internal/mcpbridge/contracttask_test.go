package mcpbridge_test

import (
	"context"
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/testkit/testproto"
)

// gadgetServices serves the built-in tools and the test-only gadget tools
// (testdata/slowtask.proto): summarize-gadgets, whose contract is slow, and
// get-gadget, which is fast. Each answers with the method that served it.
func gadgetServices(t *testing.T) server.ServicesFunc {
	c := testproto.Compile(t, "testdata", "slowtask.proto")
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
	desc := c.Service("GadgetService", map[string]testproto.Handler{
		"SummarizeGadgets": serve("SummarizeGadgets"), "GetGadget": serve("GetGadget"),
	})
	return func(ctx context.Context, d server.Deps) ([]registry.Service, func(), error) {
		svcs, cleanup, err := server.Builtin(ctx, d)
		return append(svcs, registry.Service{Desc: desc, Files: c.Files}), cleanup, err
	}
}

// TestTaskFromContract: a tool added to the tree whose contract is slow
// runs as a task over MCP, and a fast one beside it answers synchronously,
// with nothing of either in the bridge: whether a tool is a task comes from
// its contract (docs/MCP.md, "The transport knows no tool").
func TestTaskFromContract(t *testing.T) {
	t.Parallel()
	srv := newAuthServerWith(t, gadgetServices(t), nil)
	c := newClient(t, srv.HTTP)
	c.header.Set("Authorization", "Bearer "+keyAll)

	r := modernCall(t, c, "1", "tools/call", "summarize-gadgets", `"name":"summarize-gadgets","arguments":{"id":"g1"},`+tasksMeta)
	tk := decodeTask(t, r)
	if tk.ResultType != "task" || tk.TaskID == "" {
		t.Fatalf("summarize-gadgets (slow) = %s, want a task", r.Result)
	}
	done := pollTask(t, func() response {
		return modernCall(t, c, "2", "tasks/get", tk.TaskID, `"taskId":"`+tk.TaskID+`",`+tasksMeta)
	})
	var res toolResult
	if done.Status != "completed" || json.Unmarshal(done.Result, &res) != nil || res.IsError {
		t.Fatalf("finished task = %+v %s", done, done.Result)
	}
	if data, _ := res.StructuredContent["data"].(map[string]any); data["servedBy"] != "SummarizeGadgets" || data["id"] != "g1" {
		t.Fatalf("task result data = %v", res.StructuredContent["data"])
	}

	r = modernCall(t, c, "3", "tools/call", "get-gadget", `"name":"get-gadget","arguments":{"id":"g1"},`+tasksMeta)
	var fast struct {
		toolResult
		ResultType string `json:"resultType"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &fast) != nil || fast.ResultType == "task" || fast.IsError {
		t.Fatalf("get-gadget (fast) = %+v %s, want a plain result", r.Error, r.Result)
	}
	if data, _ := fast.StructuredContent["data"].(map[string]any); data["servedBy"] != "GetGadget" {
		t.Fatalf("get-gadget data = %v", fast.StructuredContent["data"])
	}
}
