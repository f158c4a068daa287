package mcpbridge

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/toolsvc/toolsvc/internal/contract/resource"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// Resource subscriptions. A client watches a resource whose provider is a
// resource.Subscriber (an upstream MCP server's, relayed to the server):
// a 2025-era client with resources/subscribe and resources/unsubscribe on
// its session (over HTTP) or connection (stdio), and hears
// notifications/resources/updated on the session's GET event streams or
// its stdio output; a 2026-07-28 client names the URIs under
// resourceSubscriptions of subscriptions/listen and hears them on that
// stream. The provider authorizes each subscription through the chain, as
// a read of the URI as the caller, so a client watches only what it may
// read. Unsubscribing, the session's end, or the listen stream's end drops
// the subscription; the provider counts them and drops its own when the
// last one goes. A subscription lives on the replica that took it: in a
// fleet the session's event stream must be open on that replica to hear
// its updates (a subscriptions/listen stream always is).

const (
	methodSubscribe     = "resources/subscribe"
	methodUnsubscribe   = "resources/unsubscribe"
	notificationUpdated = "notifications/resources/updated"
)

// watcher is one client's set of subscriptions: a 2025 session or stdio
// connection, or a subscriptions/listen stream.
type watcher struct {
	// send delivers an update of uri to the client.
	send func(uri string)
	// held are the subscribed URIs and the provider that granted each,
	// guarded by the watchers' mu.
	held map[string]resource.Subscriber
	// gone says the watcher ended (no new subscription is kept).
	gone bool
}

// watchers are every watcher of the replica, by URI.
type watchers struct {
	mu    sync.Mutex
	byURI map[string]map[*watcher]struct{}
	// byPeer are the 2025 sessions' and stdio connections' watchers.
	byPeer map[*peer]*watcher
}

func newWatchers() *watchers {
	return &watchers{byURI: map[string]map[*watcher]struct{}{}, byPeer: map[*peer]*watcher{}}
}

// subscribable reports whether any provider of the catalog relays
// subscriptions: resources.subscribe is advertised then.
func (b *Bridge) subscribable() bool {
	for _, p := range b.catalog.Load().tools.resources.providers {
		if _, ok := p.(resource.Subscriber); ok {
			return true
		}
	}
	return false
}

// watch subscribes w to uri as x's caller: nil when it was already, the
// provider's (chain's) refusal otherwise.
func (b *Bridge) watch(ctx context.Context, x *exchange, w *watcher, uri string) error {
	ws := b.watchers
	ws.mu.Lock()
	_, had := w.held[uri]
	ws.mu.Unlock()
	if had {
		return nil
	}
	ri := b.catalog.Load().tools.resources
	pr, rest, ok := ri.provider(uri)
	if !ok || rest == "" {
		return ri.notFound(uri)
	}
	s, ok := pr.(resource.Subscriber)
	if !ok {
		return &framing.Error{Code: CodeInvalidParams, Message: "invalid params: uri " + uri + " cannot be subscribed to: only an upstream MCP server's resources report changes",
			Data: map[string]any{"uri": uri}}
	}
	if err := s.Subscribe(ctx, b.caller(x), uri); err != nil {
		return protocolError(err)
	}
	ws.mu.Lock()
	_, had = w.held[uri]
	if w.gone || had {
		ws.mu.Unlock()
		s.Unsubscribe(uri) // ended meanwhile, or a concurrent twin won
		return nil
	}
	w.held[uri] = s
	if ws.byURI[uri] == nil {
		ws.byURI[uri] = map[*watcher]struct{}{}
	}
	ws.byURI[uri][w] = struct{}{}
	ws.mu.Unlock()
	return nil
}

// unwatch drops w's subscription of uri (nothing when it has none).
func (b *Bridge) unwatch(w *watcher, uri string) {
	ws := b.watchers
	ws.mu.Lock()
	s, ok := w.held[uri]
	if ok {
		delete(w.held, uri)
		ws.forget(w, uri)
	}
	ws.mu.Unlock()
	if ok {
		s.Unsubscribe(uri)
	}
}

// forget removes w from uri's watchers; ws.mu is held.
func (ws *watchers) forget(w *watcher, uri string) {
	if set := ws.byURI[uri]; set != nil {
		delete(set, w)
		if len(set) == 0 {
			delete(ws.byURI, uri)
		}
	}
}

// endWatcher drops every subscription of w; later ones are not kept.
func (b *Bridge) endWatcher(w *watcher) {
	ws := b.watchers
	ws.mu.Lock()
	w.gone = true
	held := w.held
	w.held = map[string]resource.Subscriber{}
	for uri := range held {
		ws.forget(w, uri)
	}
	ws.mu.Unlock()
	for uri, s := range held {
		s.Unsubscribe(uri)
	}
}

// peerWatcher returns the watcher of a 2025 session or stdio connection,
// made on first use and ended with the session.
func (b *Bridge) peerWatcher(p *peer) *watcher {
	ws := b.watchers
	ws.mu.Lock()
	w := ws.byPeer[p]
	if w != nil {
		ws.mu.Unlock()
		return w
	}
	w = &watcher{held: map[string]resource.Subscriber{}, send: func(uri string) {
		p.notify(framing.EncodeNotification(notificationUpdated, map[string]string{"uri": uri}))
	}}
	ws.byPeer[p] = w
	ws.mu.Unlock()
	end := func() {
		ws.mu.Lock()
		delete(ws.byPeer, p)
		ws.mu.Unlock()
		b.endWatcher(w)
	}
	if !p.onEnd(end) {
		end()
	}
	return w
}

// ResourceUpdated tells every client of this replica subscribed to uri
// that the resource changed (notifications/resources/updated, the URI
// only: the client reads it again through the chain).
func (b *Bridge) ResourceUpdated(uri string) {
	ws := b.watchers
	ws.mu.Lock()
	var to []*watcher
	for w := range ws.byURI[uri] {
		to = append(to, w)
	}
	ws.mu.Unlock()
	for _, w := range to {
		w.send(uri)
	}
}

// Watched is the number of resource URIs this replica's clients are
// subscribed to (the tests' leak check).
func (b *Bridge) Watched() int {
	b.watchers.mu.Lock()
	defer b.watchers.mu.Unlock()
	return len(b.watchers.byURI)
}

// subscribe answers resources/subscribe (2025 era) and, with unsub,
// resources/unsubscribe.
func (b *Bridge) subscribe(ctx context.Context, x *exchange, raw json.RawMessage, unsub bool) ([]byte, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if p.URI == "" {
		return nil, framing.InvalidParams(`invalid params: "uri" is required (the URI of a resource, as resources/list gives it)`)
	}
	if x.peer == nil {
		return nil, &framing.Error{Code: CodeInvalidRequest, Message: "invalid request: resources/subscribe needs a session (Mcp-Session-Id from initialize) or stdio, whose stream hears the updates"}
	}
	if unsub {
		b.unwatch(b.peerWatcher(x.peer), p.URI)
		return []byte("{}"), nil
	}
	if x.principal == nil {
		return nil, errUnauthorized
	}
	if err := b.watch(ctx, x, b.peerWatcher(x.peer), p.URI); err != nil {
		return nil, err
	}
	return []byte("{}"), nil
}
