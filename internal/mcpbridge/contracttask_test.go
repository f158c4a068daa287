package mcpbridge_test

import (
	"encoding/json"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
)

// gadgetServices serves the built-in tools and the test-only gadget tools
// (testdata/slowtask.proto): summarize-gadgets, whose contract is slow, and
// get-gadget, which is fast. Each answers with the method that served it.
func gadgetServices(t *testing.T) server.ServicesFunc {
	return echoServices(t, "slowtask.proto", "GadgetService", "SummarizeGadgets", "GetGadget")
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
