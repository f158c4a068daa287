package mcpbridge_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/resource"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testproto"
)

// watchedGadgets are gadgetResources that take subscriptions, as an
// upstream's provider does: each authorized by a read through the chain,
// and counted.
type watchedGadgets struct {
	gadgetResources
	subs, unsubs *atomic.Int32
}

func (g watchedGadgets) Subscribe(ctx context.Context, call resource.Call, uri string) error {
	if _, err := g.Read(ctx, call, uri); err != nil {
		return err
	}
	g.subs.Add(1)
	return nil
}

func (g watchedGadgets) Unsubscribe(string) { g.unsubs.Add(1) }

// TestResourceSubscriberStdio: over stdio, a 2025 client subscribes with
// resources/subscribe and a 2026-07-28 client with resourceSubscriptions
// of subscriptions/listen (a URI whose provider takes none left out of
// the acknowledgment); both hear notifications/resources/updated, the
// 2026 one under its subscription id; an unauthenticated caller is
// refused; unsubscribe, the listen's cancellation and stdin closing drop
// each subscription from the provider.
func TestResourceSubscriberStdio(t *testing.T) {
	c := testproto.Compile(t, "testdata", "slowtask.proto")
	var subs, unsubs atomic.Int32
	withProvider := func(ctx context.Context, d server.Deps) ([]registry.Service, func(), error) {
		svcs, cleanup, err := gadgetServices(t)(ctx, d)
		svcs[len(svcs)-1].Resources = watchedGadgets{gadgetResources{c}, &subs, &unsubs}
		return svcs, cleanup, err
	}
	srv := newAuthServerWith(t, withProvider, nil)
	b := srv.MCP()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s (subscribed %d, unsubscribed %d, watched %d)", what, subs.Load(), unsubs.Load(), b.Watched())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wantUpdated := func(r response, subscription string) {
		t.Helper()
		var p struct {
			URI  string                     `json:"uri"`
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if r.Method != "notifications/resources/updated" || json.Unmarshal(r.Params, &p) != nil || p.URI != "gadget://g1" ||
			(subscription != "" && string(p.Meta["io.modelcontextprotocol/subscriptionId"]) != subscription) {
			t.Fatalf("got %s %s, want notifications/resources/updated of gadget://g1 (subscription %q)", r.Method, r.Params, subscription)
		}
	}

	old := startStdio(t, b, "Bearer "+keyAll)
	old.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`)
	var init struct {
		Capabilities struct {
			Resources struct{ Subscribe bool } `json:"resources"`
		} `json:"capabilities"`
	}
	if r := old.next(); json.Unmarshal(r.Result, &init) != nil || !init.Capabilities.Resources.Subscribe {
		t.Fatalf("initialize = %s, want resources.subscribe true", r.Result)
	}
	old.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	old.send(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"gadget://g1"}}`)
	if r := old.next(); r.Error != nil || string(r.Result) != "{}" {
		t.Fatalf("resources/subscribe = %s %+v", r.Result, r.Error)
	}
	old.send(`{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"knowledge://k1"}}`)
	if r := old.next(); r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("subscribe to a provider that takes none = %s %+v, want -32602", r.Result, r.Error)
	}

	modern := startStdio(t, b, "Bearer "+keyAll)
	modern.send(`{"jsonrpc":"2.0","id":"w","method":"subscriptions/listen","params":{` + modernMeta +
		`,"notifications":{"resourceSubscriptions":["gadget://g1","knowledge://k1"]}}}`)
	ack := modern.next()
	var p struct {
		Notifications map[string]any `json:"notifications"`
	}
	if ack.Method != "notifications/subscriptions/acknowledged" || json.Unmarshal(ack.Params, &p) != nil || len(p.Notifications) != 1 ||
		len(p.Notifications["resourceSubscriptions"].([]any)) != 1 || p.Notifications["resourceSubscriptions"].([]any)[0] != "gadget://g1" {
		t.Fatalf("acknowledgment = %s %s, want resourceSubscriptions [gadget://g1] only", ack.Method, ack.Params)
	}
	if n := subs.Load(); n != 2 {
		t.Fatalf("provider subscribed %d times, want 2", n)
	}

	b.ResourceUpdated("gadget://g1")
	wantUpdated(old.next(), "")
	wantUpdated(modern.next(), `"w"`)

	// A caller that is not authenticated is refused (the chain's
	// permission refusal is TestResourceSubscriptionsRelayed's).
	other := startStdio(t, b, "Bearer not-a-key")
	other.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"k","version":"1"}}}`)
	other.next()
	other.send(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"gadget://g1"}}`)
	if r := other.next(); r.Error == nil || r.Error.Code != mcpbridge.CodeUnauthorized {
		t.Fatalf("subscribe unauthenticated = %s %+v", r.Result, r.Error)
	}

	old.send(`{"jsonrpc":"2.0","id":4,"method":"resources/unsubscribe","params":{"uri":"gadget://g1"}}`)
	if r := old.next(); r.Error != nil {
		t.Fatalf("resources/unsubscribe = %+v", r.Error)
	}
	waitFor("unsubscribe reaches the provider", func() bool { return unsubs.Load() == 1 })
	modern.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w"}}`)
	waitFor("the listen's end drops its subscription", func() bool { return unsubs.Load() == 2 && b.Watched() == 0 })

	// stdin closing ends the connection's subscriptions.
	old.send(`{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"gadget://g1"}}`)
	old.next()
	old.in.Close()
	waitFor("the connection's end drops its subscription", func() bool { return unsubs.Load() == 3 && b.Watched() == 0 })
}
