package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
	"github.com/toolsvc/toolsvc/internal/contract/resource"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// Resource subscriptions are relayed to the upstream once per upstream
// URI: the first client subscription sends resources/subscribe on
// toolsvc's connection to the server, the last one to end sends
// resources/unsubscribe, and the server's notifications/resources/updated
// goes to the set's owner (WithOnResourceUpdated) under the served URI,
// which tells every subscribed client. A client's subscription is
// authorized by reading the resource through the chain as the client
// (show-{ns}-resource: authenticated, the granted permission, tenant, rate
// limit, bulkhead, audit), so a caller may watch exactly what it may read.

const (
	methodSubscribe     = "resources/subscribe"
	methodUnsubscribe   = "resources/unsubscribe"
	notificationUpdated = "notifications/resources/updated"
)

// subscriptions counts the clients' subscriptions per upstream URI. relay
// is held across the request to the server, so that a first subscription
// and a last unsubscription of one URI do not cross; mu guards n alone, so
// a notification the transport delivers while a request waits for its
// answer never waits for relay.
type subscriptions struct {
	relay sync.Mutex
	mu    sync.Mutex
	n     map[string]int
}

func (s *subscriptions) count(uri string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[uri]
}

// add adds d to uri's count.
func (s *subscriptions) add(uri string, d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	if s.n[uri] += d; s.n[uri] <= 0 {
		delete(s.n, uri)
	}
}

// WithOnResourceUpdated calls f with the served URI ({ns}+ the server's)
// when an MCP server sends notifications/resources/updated for a resource
// of the granted ones that a client subscribed to.
func WithOnResourceUpdated(f func(uri string)) Option {
	return func(s *Set) { s.onResourceUpdated = f }
}

// Subscribe implements resource.Subscriber: the caller reads uri through
// the chain (its refusal is returned unchanged), then the subscription is
// counted and, if it is the first for the server's URI, relayed.
func (r *federatedResources) Subscribe(ctx context.Context, call resource.Call, uri string) error {
	if r.u.mcp.revision() == Revision2026 {
		return toolerr.New(toolerr.ProviderError, "the upstream %s speaks MCP %s, whose resource subscriptions toolsvc does not relay yet; read the resource again instead", r.upstream, Revision2026).
			WithDetails(map[string]any{"uri": uri, "upstream": r.upstream})
	}
	if _, err := r.Read(ctx, call, uri); err != nil {
		return err
	}
	return r.u.subscribe(ctx, strings.TrimPrefix(uri, r.Scheme()))
}

// Unsubscribe implements resource.Subscriber.
func (r *federatedResources) Unsubscribe(uri string) {
	r.u.unsubscribe(strings.TrimPrefix(uri, r.Scheme()))
}

// subscribe counts a subscription of the server's uri, relaying the first.
func (u *Upstream) subscribe(ctx context.Context, uri string) error {
	s := &u.subs
	s.relay.Lock()
	defer s.relay.Unlock()
	if s.count(uri) > 0 {
		s.add(uri, 1)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), u.cfg.Timeout)
	defer cancel()
	if _, err := u.mcp.call(ctx, methodSubscribe, map[string]any{"uri": uri}, nil); err != nil {
		return u.mapMCPError(ctx, err)
	}
	s.add(uri, 1)
	return nil
}

// unsubscribe drops a subscription of the server's uri, relaying the last.
func (u *Upstream) unsubscribe(uri string) {
	s := &u.subs
	s.relay.Lock()
	defer s.relay.Unlock()
	if s.count(uri) == 0 {
		return
	}
	if s.add(uri, -1); s.count(uri) > 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), u.cfg.Timeout)
	defer cancel()
	if _, err := u.mcp.call(ctx, methodUnsubscribe, map[string]any{"uri": uri}, nil); err != nil {
		u.logger.Warn("upstream resources/unsubscribe failed", "upstream", u.cfg.Name, "uri", uri, "error", err.Error())
	}
}

// Subscribed is how many upstream URIs of the server have a relayed
// subscription (the tests' leak check).
func (u *Upstream) Subscribed() int {
	u.subs.mu.Lock()
	defer u.subs.mu.Unlock()
	return len(u.subs.n)
}

// resourceUpdated relays the server's notifications/resources/updated of
// a subscribed URI under its served name.
func (u *Upstream) resourceUpdated(params json.RawMessage) {
	if u.set == nil || u.set.onResourceUpdated == nil || u.cfg.Resources == nil {
		return
	}
	uri, ok := jsonrpc.StringValue(jsonrpc.Member(params, "uri"))
	if !ok || uri == "" {
		return
	}
	if u.subs.count(uri) == 0 {
		return // nobody asked (a server that tells more than it was asked)
	}
	u.set.onResourceUpdated(u.cfg.Resources.namespace(u.cfg.Name) + "+" + uri)
}

// updatesPeer hands the client's transports the server's messages: a
// notifications/resources/updated, which carries the URI, goes to
// onNotify with its params; everything else as before.
type updatesPeer struct{ *mcpClient }

func (p updatesPeer) notification(m *jsonrpc.Message) {
	if m.Method == notificationUpdated && p.onNotify != nil {
		p.onNotify(m.Method, m.Params)
		return
	}
	p.mcpClient.notification(m)
}
