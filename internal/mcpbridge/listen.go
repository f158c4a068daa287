package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/resource"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/streamhttp"
)

// subscriptions/listen (revision 2026-07-28, SEP-2575) replaces the 2025
// GET event stream: a modern client opens a long-lived request naming the
// notifications it wants, the server acknowledges the subset it honours and
// then sends each one on the request's own stream (the POST's event stream
// over HTTP, stdout over stdio), every message carrying the request's id as
// io.modelcontextprotocol/subscriptionId. toolsvc honours toolsListChanged
// (the tool set changes at run time, replaceTools), resourcesListChanged
// and promptsListChanged (an upstream MCP server's granted resources and
// prompts change, ListChanged): every listener that asked hears
// notifications/tools|resources|prompts/list_changed. These carry no
// content, so a listener learns nothing its credential could not see: its
// next listing is decided by the chain as always. resourceSubscriptions
// names resources to watch (subscribe.go): each URI the caller may read
// and whose provider relays changes is acknowledged and its
// notifications/resources/updated sent on the stream; any other URI is
// left out of the acknowledgment, as the revision has servers do for what
// they do not support.

const (
	methodListen             = "subscriptions/listen"
	notificationAcknowledged = "notifications/subscriptions/acknowledged"
	notificationToolsChanged = "notifications/tools/list_changed"
)

// errNoResponse is a request's outcome when nothing may be sent back: a
// subscription the client cancelled or whose transport is gone.
var errNoResponse = errors.New("no response")

// listener is one open subscriptions/listen stream.
type listener struct {
	// id is the subscription's (the request's) id.
	id json.RawMessage
	// wants is what the acknowledgment agreed to, resourceSubscriptions
	// aside (the watcher holds those).
	wants subscriptionFilter
	// notes are pending notifications other than tool-list changes (a
	// token on more while any is), deduplicated: a change already pending
	// is not queued twice.
	nmu   sync.Mutex
	notes [][]byte
	more  chan struct{}
	owner string
	// principal is the caller that opened the stream, which EndRevoked
	// checks against the auth policy in force.
	principal *auth.Principal
	// peer is the stdio connection of the listener; nil over HTTP.
	peer *peer
	// wake holds a token while a list change is not yet sent: changes
	// coalesce (the notification has no content), so none is ever lost
	// to a full queue and a slow client costs one token.
	wake chan struct{}
	// end is closed when the server ends the subscription; graceful says
	// whether it answers the request first (a newer listener of the same
	// principal replaced it) or not (its stdio transport closed).
	end      chan struct{}
	graceful bool
}

// listenerSet holds the open listeners, at most perOwner per principal:
// a new one beyond that ends the principal's oldest one gracefully, as a
// new session ends the least recently used one.
type listenerSet struct {
	perOwner int
	mu       sync.Mutex
	byOwner  map[string][]*listener // oldest first
	n        int
}

func newListenerSet(perOwner int) *listenerSet {
	return &listenerSet{perOwner: perOwner, byOwner: map[string][]*listener{}}
}

// add registers a listener of owner (over peer p on stdio) for
// subscription id, agreed to wants.
func (s *listenerSet) add(owner string, principal *auth.Principal, p *peer, id json.RawMessage, wants subscriptionFilter) *listener {
	l := &listener{id: id, wants: wants, more: make(chan struct{}, 1), owner: owner, principal: principal, peer: p,
		wake: make(chan struct{}, 1), end: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	own := s.byOwner[owner]
	if len(own) >= s.perOwner {
		oldest := own[0]
		own = own[1:]
		s.n--
		oldest.graceful = true
		close(oldest.end)
	}
	s.byOwner[owner] = append(own, l)
	s.n++
	return l
}

// remove forgets l; it is a no-op for a listener already ended.
func (s *listenerSet) remove(l *listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	own := s.byOwner[l.owner]
	for i, o := range own {
		if o == l {
			own = append(own[:i:i], own[i+1:]...)
			s.n--
			break
		}
	}
	if len(own) == 0 {
		delete(s.byOwner, l.owner)
	} else {
		s.byOwner[l.owner] = own
	}
}

// wakeAll tells every listener that asked the tool list changed.
func (s *listenerSet) wakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, own := range s.byOwner {
		for _, l := range own {
			if !l.wants.ToolsListChanged {
				continue
			}
			select {
			case l.wake <- struct{}{}:
			default: // a change is already pending
			}
		}
	}
}

// listChanged queues notification method (resources or prompts
// list_changed) for every listener that asked for it.
func (s *listenerSet) listChanged(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, own := range s.byOwner {
		for _, l := range own {
			if (method == notificationResourcesChanged && l.wants.ResourcesListChanged) ||
				(method == notificationPromptsChanged && l.wants.PromptsListChanged) {
				l.queue(encodeSubscriptionNote(method, l.id, nil))
			}
		}
	}
}

// queue adds a notification to send, unless the same one is pending.
func (l *listener) queue(msg []byte) {
	l.nmu.Lock()
	defer l.nmu.Unlock()
	for _, n := range l.notes {
		if bytes.Equal(n, msg) {
			return
		}
	}
	l.notes = append(l.notes, msg)
	select {
	case l.more <- struct{}{}:
	default:
	}
}

// pending takes the queued notifications.
func (l *listener) pending() [][]byte {
	l.nmu.Lock()
	defer l.nmu.Unlock()
	notes := l.notes
	l.notes = nil
	return notes
}

// endPeer ends the listeners of a stdio connection whose input closed:
// there is no one left to answer.
func (s *listenerSet) endPeer(p *peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for owner, own := range s.byOwner {
		kept := own[:0:0]
		for _, l := range own {
			if l.peer == p {
				close(l.end)
				s.n--
				continue
			}
			kept = append(kept, l)
		}
		if len(kept) == 0 {
			delete(s.byOwner, owner)
		} else {
			s.byOwner[owner] = kept
		}
	}
}

// endWhere ends, gracefully (the request is answered), every listener for
// which gone reports true, and returns how many it ended.
func (s *listenerSet) endWhere(gone func(*listener) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for owner, own := range s.byOwner {
		kept := own[:0:0]
		for _, l := range own {
			if gone(l) {
				l.graceful = true
				close(l.end)
				s.n--
				n++
				continue
			}
			kept = append(kept, l)
		}
		if len(kept) == 0 {
			delete(s.byOwner, owner)
		} else {
			s.byOwner[owner] = kept
		}
	}
	return n
}

// len is the number of open listeners.
func (s *listenerSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// subscriptionFilter is the notifications field of subscriptions/listen
// and of its acknowledgment.
type subscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	// TaskIDs asks for notifications/tasks (the Tasks extension).
	TaskIDs []string `json:"taskIds,omitempty"`
}

// listen serves subscriptions/listen: the acknowledgment, then a
// notification per tool-list change, until the client cancels (no
// response), the transport closes (none either), or the server ends the
// subscription: shutdown or a newer listener of the same principal, which
// answer the request with a result naming the subscription.
func (b *Bridge) listen(ctx context.Context, x *exchange, m *framing.Message) ([]byte, error) {
	if x.principal == nil {
		return nil, errUnauthorized
	}
	if x.batch || (x.keepAlive == nil && stdioPeer(x) == nil) {
		// Only a request of its own holds a stream open: not one of a
		// batch (which answers once, and holds the connection's reading
		// on stdio), not a plain JSON response.
		return nil, &framing.Error{Code: CodeInvalidRequest, Message: "invalid request: subscriptions/listen needs a stream of its own (a single request accepting text/event-stream, or a stdio message)"}
	}
	agreed, err := listenFilter(m)
	if err != nil {
		return nil, err
	}

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer b.track(x, m.ID, cancel)()
	var l *listener
	watched := agreed.ResourceSubscriptions
	agreed.ResourceSubscriptions = nil
	if agreed.ToolsListChanged || agreed.ResourcesListChanged || agreed.PromptsListChanged || len(watched) > 0 {
		// Registered before the acknowledgment, so no change after it is
		// missed; its notifications still go out after it.
		l = b.listeners.add(principalKey(x.principal), x.principal, stdioPeer(x), m.ID, agreed)
		defer b.listeners.remove(l)
		w := &watcher{held: map[string]resource.Subscriber{}, send: func(uri string) {
			l.queue(encodeSubscriptionNote(notificationUpdated, m.ID, map[string]any{"uri": uri}))
		}}
		defer b.endWatcher(w)
		for _, uri := range watched {
			if err := b.watch(ctx, x, w, uri); err == nil {
				agreed.ResourceSubscriptions = append(agreed.ResourceSubscriptions, uri)
			}
		}
		if !agreed.ToolsListChanged && !agreed.ResourcesListChanged && !agreed.PromptsListChanged && len(agreed.ResourceSubscriptions) == 0 {
			l = nil
		}
	}
	x.notify(encodeSubscriptionNote(notificationAcknowledged, m.ID, map[string]any{"notifications": agreed}))
	if l == nil {
		return b.listenClosed(m.ID), nil // nothing to wait for
	}
	var keepAlive <-chan time.Time
	if x.keepAlive != nil {
		t := time.NewTicker(b.cfg.KeepAlive)
		defer t.Stop()
		keepAlive = t.C
	}
	changed := encodeSubscriptionNote(notificationToolsChanged, m.ID, nil)
	for {
		select {
		case <-l.wake:
			x.notify(changed)
		case <-l.more:
			for _, n := range l.pending() {
				x.notify(n)
			}
		case <-keepAlive:
			x.keepAlive()
		case <-l.end:
			if l.graceful {
				return b.listenClosed(m.ID), nil
			}
			return nil, errNoResponse
		case <-b.draining:
			return b.listenClosed(m.ID), nil
		case <-b.stop:
			return b.listenClosed(m.ID), nil
		case <-ctx.Done():
			if parent.Err() == nil {
				// The client cancelled it (notifications/cancelled on
				// stdio): no response.
				return nil, errNoResponse
			}
			// The connection is ending: over HTTP the client closed the
			// stream (no one reads this), on stdio the server is ending
			// the connection, which ends the subscription gracefully.
			return b.listenClosed(m.ID), nil
		}
	}
}

// listenFilter reads the filter of a subscriptions/listen request and
// returns the part the bridge honours.
func listenFilter(m *framing.Message) (subscriptionFilter, error) {
	var p struct {
		Notifications *subscriptionFilter `json:"notifications"`
	}
	if err := params(m.Params, &p); err != nil {
		return subscriptionFilter{}, err
	}
	if p.Notifications == nil {
		return subscriptionFilter{}, framing.InvalidParams(`invalid params: "notifications" is required (an object naming the notifications to receive)`)
	}
	if len(p.Notifications.TaskIDs) > 0 && !declaresTasks(m.Params) {
		return subscriptionFilter{}, missingTasksCapability()
	}
	f := p.Notifications
	return subscriptionFilter{ToolsListChanged: f.ToolsListChanged, ResourcesListChanged: f.ResourcesListChanged,
		PromptsListChanged: f.PromptsListChanged, ResourceSubscriptions: f.ResourceSubscriptions}, nil
}

// stdioPeer is x's stdio connection, nil over HTTP.
func stdioPeer(x *exchange) *peer {
	if x.peer != nil && x.peer.out != nil {
		return x.peer
	}
	return nil
}

// listenClosed is the result that ends subscription id gracefully.
func (b *Bridge) listenClosed(id json.RawMessage) []byte {
	out := make([]byte, 0, 160)
	out = append(out, `{"resultType":"complete","_meta":{"`+metaSubscriptionID+`":`...)
	out = append(out, id...)
	out = append(out, `,"`+metaServerInfo+`":`...)
	out = append(out, b.serverInfoJSON()...)
	return append(out, "}}"...)
}

// encodeSubscriptionNote renders a notification of subscription id: its
// params (a JSON object, or none) with _meta naming the subscription.
func encodeSubscriptionNote(method string, id json.RawMessage, fields map[string]any) []byte {
	params := map[string]any{"_meta": map[string]json.RawMessage{metaSubscriptionID: id}}
	for k, v := range fields {
		params[k] = v
	}
	return framing.EncodeNotification(method, params)
}

// listenHTTP serves subscriptions/listen over Streamable HTTP: the
// response is an event stream that stays open, with keep-alive comments,
// until the subscription ends. The client closing it cancels the
// subscription.
func (b *Bridge) listenHTTP(w http.ResponseWriter, r *http.Request, x *exchange, m *framing.Message) {
	fail := func(status int, re *framing.Error) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(framing.EncodeError(m.ID, re))
	}
	if !streamhttp.Accepts(r, "text/event-stream") {
		fail(http.StatusNotAcceptable, &framing.Error{Code: CodeInvalidRequest, Message: "not acceptable: subscriptions/listen answers with an event stream (accept text/event-stream)"})
		return
	}
	// A refused filter is answered before any stream opens.
	if _, err := listenFilter(m); err != nil {
		var re *framing.Error
		if !errors.As(err, &re) {
			re = &framing.Error{Code: CodeInternalError, Message: "internal error"}
		}
		fail(modernStatus(re.Code), re)
		return
	}
	stream := streamhttp.OpenEventStream(w)
	x.notify = func(msg []byte) { _ = stream.Message(msg) }
	x.keepAlive = func() { _ = stream.Comment("keep-alive") }
	if resp := b.serve(r.Context(), x, m); !resp.Empty() {
		x.notify(resp.Bytes())
	}
}

// EndSubscriptions ends every subscriptions/listen stream gracefully (each
// request gets its closing result) and every session's GET event stream
// (its client reconnects, as at the end of a stream's lifetime): the
// server calls it when shutdown begins, so that long-lived streams do not
// hold the HTTP server's graceful shutdown for its whole grace period.
// Safe to call more than once; other requests are not affected.
func (b *Bridge) EndSubscriptions() {
	b.drainOnce.Do(func() { close(b.draining) })
}

// Listeners is the number of open subscriptions/listen streams (the
// tests' leak check).
func (b *Bridge) Listeners() int { return b.listeners.len() }

// missingTasksCapability is the error for a request that needs the Tasks
// extension its client did not declare.
func missingTasksCapability() *framing.Error {
	return &framing.Error{Code: CodeMissingClientCapability, Message: "Missing required client capability: " + strconv.Quote(extTasks),
		Data: map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{extTasks: map[string]any{}}}}}
}
