package mcpbridge_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/resource"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testproto"
)

// gadgetResources serves gadgets as resources at gadget://{id}, reading
// each through get-gadget on the chain.
type gadgetResources struct{ c testproto.Compiled }

func (gadgetResources) Scheme() string { return "gadget://" }

func (gadgetResources) Template() resource.Template {
	return resource.Template{URITemplate: "gadget://{id}", Name: "gadget", Title: "Gadget", MIMEType: "text/plain"}
}

func (gadgetResources) Instructions() string { return "Gadgets are resources at gadget://{id}." }

func (gadgetResources) List(context.Context, resource.Call) ([]resource.Resource, error) {
	return []resource.Resource{{URI: "gadget://g1", Name: "g1", MIMEType: "text/plain"}}, nil
}

func (g gadgetResources) Read(ctx context.Context, call resource.Call, uri string) ([]resource.Content, error) {
	md := g.c.File.Services().ByName("GadgetService").Methods().ByName("GetGadget")
	in, out := dynamicpb.NewMessage(md.Input()), dynamicpb.NewMessage(md.Output())
	in.Set(md.Input().Fields().ByName("id"), protoreflect.ValueOfString(strings.TrimPrefix(uri, "gadget://")))
	if err := call(ctx, "/slowtasktest.gadgets.v1.GadgetService/GetGadget", in, out); err != nil {
		return nil, err
	}
	data := out.Get(md.Output().Fields().ByName("data")).Message()
	text := data.Get(data.Descriptor().Fields().ByName("served_by")).String()
	return []resource.Content{{URI: uri, MIMEType: "text/plain", Text: text}}, nil
}

func (gadgetResources) Complete(_ context.Context, _ resource.Call, argument, prefix string) []string {
	if argument != "id" || !strings.HasPrefix("g1", prefix) {
		return []string{}
	}
	return []string{"g1"}
}

// TestResourceProvider: a provider registered with a test-only service
// serves its resources beside the knowledge ones, through the chain, with
// nothing of it in the bridge (docs/MCP.md, "The transport knows no tool").
func TestResourceProvider(t *testing.T) {
	t.Parallel()
	c := testproto.Compile(t, "testdata", "slowtask.proto")
	withProvider := func(ctx context.Context, d server.Deps) ([]registry.Service, func(), error) {
		svcs, cleanup, err := gadgetServices(t)(ctx, d)
		svcs[len(svcs)-1].Resources = gadgetResources{c}
		return svcs, cleanup, err
	}
	srv := newAuthServerWith(t, withProvider, nil)
	cl := newClient(t, srv.HTTP)
	cl.header.Set("Authorization", "Bearer "+keyAll)
	var init struct{ Instructions string }
	if err := json.Unmarshal(cl.initialize("resource-provider"), &init); err != nil ||
		!strings.HasSuffix(init.Instructions, "retry as it says. Accepted knowledge items are resources at knowledge://{id}. Gadgets are resources at gadget://{id}.") {
		t.Fatalf("instructions = %q (%v), want the bridge's, then each provider's sentence", init.Instructions, err)
	}

	var tpl struct {
		ResourceTemplates []struct{ URITemplate string } `json:"resourceTemplates"`
	}
	cl.result("resources/templates/list", nil, &tpl)
	var uris []string
	for _, x := range tpl.ResourceTemplates {
		uris = append(uris, x.URITemplate)
	}
	if !slices.Equal(uris, []string{"knowledge://{id}", "gadget://{id}", "toolsvc://tools/{name}/output-schema"}) {
		t.Fatalf("templates = %v", uris)
	}
	var list struct {
		Resources []struct{ URI string } `json:"resources"`
	}
	cl.result("resources/list", nil, &list)
	if !slices.ContainsFunc(list.Resources, func(r struct{ URI string }) bool { return r.URI == "gadget://g1" }) {
		t.Fatalf("resources = %+v, want gadget://g1 among them", list.Resources)
	}
	var read struct {
		Contents []struct{ URI, MimeType, Text string } `json:"contents"`
	}
	cl.result("resources/read", map[string]any{"uri": "gadget://g1"}, &read)
	if len(read.Contents) != 1 || read.Contents[0].Text != "GetGadget" || read.Contents[0].URI != "gadget://g1" {
		t.Fatalf("read = %+v", read)
	}
	if r := cl.call("resources/read", map[string]any{"uri": "gadget://"}); r.Error == nil || r.Error.Code != -32002 ||
		!strings.Contains(r.Error.Message, "gadget://{id}") {
		t.Fatalf("read of the bare scheme = %s %+v", r.Result, r.Error)
	}
	var comp struct {
		Completion struct{ Values []string } `json:"completion"`
	}
	cl.result("completion/complete", map[string]any{"ref": map[string]any{"type": "ref/resource", "uri": "gadget://{id}"},
		"argument": map[string]any{"name": "id", "value": "g"}}, &comp)
	if !slices.Equal(comp.Completion.Values, []string{"g1"}) {
		t.Fatalf("completion = %v", comp.Completion.Values)
	}
}
