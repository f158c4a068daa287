package mcpbridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/toolsvc/toolsvc/internal/contract/prompt"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/resource"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testproto"
)

// gadgetPrompts serves one prompt, gadget/describe {id}, rendered from
// get-gadget on the chain: a caller the chain refuses get-gadget sees and
// gets no prompt.
type gadgetPrompts struct{ c testproto.Compiled }

func (gadgetPrompts) Prefix() string { return "gadget/" }

func (g gadgetPrompts) served(ctx context.Context, call resource.Call, id string) (string, error) {
	md := g.c.File.Services().ByName("GadgetService").Methods().ByName("GetGadget")
	in, out := dynamicpb.NewMessage(md.Input()), dynamicpb.NewMessage(md.Output())
	in.Set(md.Input().Fields().ByName("id"), protoreflect.ValueOfString(id))
	if err := call(ctx, "/slowtasktest.gadgets.v1.GadgetService/GetGadget", in, out); err != nil {
		return "", err
	}
	data := out.Get(md.Output().Fields().ByName("data")).Message()
	return data.Get(data.Descriptor().Fields().ByName("served_by")).String(), nil
}

func (g gadgetPrompts) List(ctx context.Context, call resource.Call) ([]prompt.Prompt, error) {
	if _, err := g.served(ctx, call, "g1"); err != nil {
		return nil, err
	}
	return []prompt.Prompt{{Name: "gadget/describe", Description: "Describe a gadget.",
		Arguments: []prompt.Argument{{Name: "id", Description: "The gadget.", Required: true}}}}, nil
}

func (g gadgetPrompts) Get(ctx context.Context, call resource.Call, name string, args map[string]string) (prompt.Result, error) {
	if name != "gadget/describe" {
		return prompt.Result{}, toolerr.New(toolerr.InvalidInput, "name: no prompt %q", name)
	}
	if args["id"] == "" {
		return prompt.Result{}, toolerr.New(toolerr.InvalidInput, "arguments.id: the prompt needs argument id")
	}
	by, err := g.served(ctx, call, args["id"])
	if err != nil {
		return prompt.Result{}, err
	}
	msg, _ := json.Marshal(map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Describe gadget " + args["id"] + " (" + by + ")."}})
	return prompt.Result{Description: "A gadget.", Messages: []json.RawMessage{msg}}, nil
}

// TestPromptProvider: a prompt provider registered with a test-only
// service serves prompts/list and prompts/get over both revisions, through
// the chain, with nothing of it in the bridge (docs/MCP.md, "The transport
// knows no tool"); a missing argument and a prompt outside every
// provider's prefix are refused naming the field. (A caller the chain
// refuses sees none: TestEverythingServerServedWhole.)
func TestPromptProvider(t *testing.T) {
	t.Parallel()
	c := testproto.Compile(t, "testdata", "slowtask.proto")
	withProvider := func(ctx context.Context, d server.Deps) ([]registry.Service, func(), error) {
		svcs, cleanup, err := gadgetServices(t)(ctx, d)
		svcs[len(svcs)-1].Prompts = gadgetPrompts{c}
		return svcs, cleanup, err
	}
	srv := newAuthServerWith(t, withProvider, nil)
	cl := newClient(t, srv.HTTP)
	cl.header.Set("Authorization", "Bearer "+keyAll)
	var init struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(cl.initialize("prompt-provider"), &init); err != nil || init.Capabilities["prompts"] == nil {
		t.Fatalf("initialize capabilities = %v (%v), want prompts", init.Capabilities, err)
	}
	var list struct {
		Prompts []struct{ Name string } `json:"prompts"`
	}
	cl.result("prompts/list", nil, &list)
	if len(list.Prompts) != 1 || list.Prompts[0].Name != "gadget/describe" {
		t.Fatalf("prompts/list = %+v", list)
	}
	var got struct {
		Description string
		Messages    []struct {
			Role    string
			Content struct{ Type, Text string }
		}
	}
	cl.result("prompts/get", map[string]any{"name": "gadget/describe", "arguments": map[string]string{"id": "g7"}}, &got)
	if len(got.Messages) != 1 || got.Messages[0].Content.Text != "Describe gadget g7 (GetGadget)." {
		t.Fatalf("prompts/get = %+v", got)
	}
	if r := cl.call("prompts/get", map[string]any{"name": "gadget/describe"}); r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "arguments.id") {
		t.Fatalf("prompts/get without its argument = %s %+v", r.Result, r.Error)
	}
	if r := cl.call("prompts/get", map[string]any{"name": "describe"}); r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "gadget/…") {
		t.Fatalf("prompts/get outside every prefix = %s %+v", r.Result, r.Error)
	}
	if r := cl.call("prompts/get", map[string]any{"name": "gadget/describe", "arguments": map[string]any{"id": 7}}); r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("prompts/get with a number argument = %s %+v", r.Result, r.Error)
	}

	// The same over revision 2026-07-28, without a session.
	mc := newClient(t, srv.HTTP)
	mc.header.Set("Authorization", "Bearer "+keyAll)
	r := modernCall(t, mc, "1", "prompts/list", "", tasksMeta)
	if r.Error != nil || !strings.Contains(string(r.Result), `"gadget/describe"`) || !strings.Contains(string(r.Result), `"ttlMs"`) {
		t.Fatalf("2026 prompts/list = %+v %s", r.Error, r.Result)
	}
	r = modernCall(t, mc, "2", "prompts/get", "gadget/describe", `"name":"gadget/describe","arguments":{"id":"g2"},`+tasksMeta)
	if r.Error != nil || !strings.Contains(string(r.Result), "Describe gadget g2 (GetGadget).") || !strings.Contains(string(r.Result), `"resultType":"complete"`) {
		t.Fatalf("2026 prompts/get = %+v %s", r.Error, r.Result)
	}
}
