package mcpbridge

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
)

// peer is the client side of a conversation: a session (stateful HTTP), the
// one connection of stdio, or a single request (stateless HTTP).
type peer struct {
	// id is the Mcp-Session-Id; empty for stdio and stateless peers.
	id string
	// owner is the principalKey of the caller that opened the session.
	owner string
	// principal is the caller of the session's latest request, which
	// EndRevoked checks against the auth policy in force.
	principal atomic.Pointer[auth.Principal]
	// spare makes end leave the session's calls running: a revoked
	// session's calls finish under the policy that admitted them.
	spare atomic.Bool
	// level is the minimum log level for notifications/message, an index
	// into logLevels; -1 (the default) sends none.
	level atomic.Int32
	// lastUsed is a unix nanosecond time.
	lastUsed atomic.Int64
	// checked is when a shared session was last confirmed by the registry
	// (unix nanoseconds; 0: at its next use).
	checked atomic.Int64

	mu         sync.Mutex
	clientName string
	clientVer  string
	revision   string
	// asks are what the client declared it can be asked (ask.go).
	asks     askCaps
	inflight map[string]context.CancelFunc
	// streams are the open GET event streams of the session.
	streams map[chan []byte]struct{}
	closed  bool
	// out writes a message to a stdio client; nil for HTTP peers.
	out func([]byte)
	// ends run once when the session ends (its resource subscriptions).
	ends []func()
}

func newPeer(id, owner string) *peer {
	p := &peer{id: id, owner: owner, inflight: map[string]context.CancelFunc{}, streams: map[chan []byte]struct{}{}}
	p.level.Store(-1)
	p.touch()
	return p
}

func (p *peer) touch() { p.lastUsed.Store(time.Now().UnixNano()) }

func (p *peer) setClient(ci clientInfo, revision string) {
	p.mu.Lock()
	p.clientName, p.clientVer, p.revision = ci.Name, ci.Version, revision
	p.mu.Unlock()
}

func (p *peer) setAskCaps(c askCaps) {
	p.mu.Lock()
	p.asks = c
	p.mu.Unlock()
}

func (p *peer) askCaps() askCaps {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asks
}

func (p *peer) client() (name, version string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clientName, p.clientVer
}

func (p *peer) negotiated() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.revision
}

func (p *peer) track(id string, cancel context.CancelFunc) func() {
	p.mu.Lock()
	p.inflight[id] = cancel
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.inflight, id)
		p.mu.Unlock()
	}
}

func (p *peer) cancel(id string) {
	p.mu.Lock()
	c := p.inflight[id]
	delete(p.inflight, id)
	p.mu.Unlock()
	if c != nil {
		c()
	}
}

// openStream registers a GET event stream; it fails on a closed session.
func (p *peer) openStream() (chan []byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, false
	}
	ch := make(chan []byte, 16)
	p.streams[ch] = struct{}{}
	return ch, true
}

func (p *peer) closeStream(ch chan []byte) {
	p.mu.Lock()
	if _, ok := p.streams[ch]; ok {
		delete(p.streams, ch)
		close(ch)
	}
	p.mu.Unlock()
}

// broadcast queues a server-initiated message on the session's GET
// streams; a full stream drops it rather than block a call.
func (p *peer) broadcast(msg []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	sent := false
	for ch := range p.streams {
		select {
		case ch <- msg:
			sent = true
		default:
		}
	}
	return sent
}

// notify sends a server-initiated message: on a stdio peer's output, or
// to a session's GET streams.
func (p *peer) notify(msg []byte) {
	if p.out != nil {
		p.out(msg)
		return
	}
	p.broadcast(msg)
}

// onEnd runs f when the session ends; false (and f not kept) when it has
// ended already.
func (p *peer) onEnd(f func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.ends = append(p.ends, f)
	return true
}

// end cancels the session's calls and closes its streams.
func (p *peer) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, f := range p.ends {
		go f() // it may reach an upstream: never under p.mu
	}
	p.ends = nil
	for id, c := range p.inflight {
		if !p.spare.Load() {
			c()
		}
		delete(p.inflight, id)
	}
	for ch := range p.streams {
		delete(p.streams, ch)
		close(ch)
	}
}

// sessionStore holds the sessions of stateful Streamable HTTP. Each
// principal holds at most perOwner of them: sessions cost memory until
// they are deleted or idle for s.idle, and a client that initializes for
// every call and never deletes (the soak's did) grew the heap by a few
// MiB a minute.
type sessionStore struct {
	idle     time.Duration
	perOwner int
	mu       sync.Mutex
	m        map[string]*peer
	byOwner  map[string]map[string]*peer
	// watched are the shared sessions the registry is being asked about
	// (sessionshare.go, watch).
	watched map[string]*watch
	// subscriptions counts the fanout's (re)subscriptions (recheckAll).
	subscriptions atomic.Uint64
}

func newSessionStore(idle time.Duration, perOwner int) *sessionStore {
	return &sessionStore{idle: idle, perOwner: perOwner, m: map[string]*peer{}, byOwner: map[string]map[string]*peer{}, watched: map[string]*watch{}}
}

// create opens a session owned by owner, with an unguessable id. When
// owner already holds perOwner sessions, its least recently used one ends
// (preferring one with no call in flight and no open stream).
func (s *sessionStore) create(owner string) *peer {
	p := newPeer(newSessionID(), owner)
	var ended *peer
	s.mu.Lock()
	if own := s.byOwner[owner]; len(own) >= s.perOwner {
		ended = leastRecentlyUsed(own)
		s.drop(ended)
	}
	s.insert(p)
	s.mu.Unlock()
	if ended != nil {
		ended.end()
	}
	return p
}

// leastRecentlyUsed picks the session of own to end: the least recently
// used idle one, or the least recently used of all when every one is busy.
func leastRecentlyUsed(own map[string]*peer) *peer {
	var idle, oldest *peer
	for _, p := range own {
		if oldest == nil || p.lastUsed.Load() < oldest.lastUsed.Load() {
			oldest = p
		}
		if !p.busy() && (idle == nil || p.lastUsed.Load() < idle.lastUsed.Load()) {
			idle = p
		}
	}
	if idle != nil {
		return idle
	}
	return oldest
}

// busy reports a call in flight or an open event stream.
func (p *peer) busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.inflight) > 0 || len(p.streams) > 0
}

// drop forgets p; s.mu must be held.
func (s *sessionStore) drop(p *peer) {
	delete(s.m, p.id)
	if own := s.byOwner[p.owner]; own != nil {
		delete(own, p.id)
		if len(own) == 0 {
			delete(s.byOwner, p.owner)
		}
	}
}

// get returns the session id if it exists and belongs to owner. A session
// of another principal is reported as missing, so ids cannot be probed.
func (s *sessionStore) get(id, owner string) (*peer, bool) {
	s.mu.Lock()
	p, ok := s.m[id]
	s.mu.Unlock()
	if !ok || p.owner != owner {
		return nil, false
	}
	p.touch()
	return p, true
}

// remove ends the session id of owner; false when there is none.
func (s *sessionStore) remove(id, owner string) bool {
	s.mu.Lock()
	p, ok := s.m[id]
	if ok && p.owner == owner {
		s.drop(p)
	}
	s.mu.Unlock()
	if !ok || p.owner != owner {
		return false
	}
	p.end()
	return true
}

func (s *sessionStore) expire(now time.Time) {
	cutoff := now.Add(-s.idle).UnixNano()
	var ended []*peer
	s.mu.Lock()
	for _, p := range s.m {
		if p.lastUsed.Load() < cutoff && !p.busy() {
			s.drop(p)
			ended = append(ended, p)
		}
	}
	s.mu.Unlock()
	for _, p := range ended {
		p.end()
	}
}

// each calls f for every open session.
func (s *sessionStore) each(f func(*peer)) {
	s.mu.Lock()
	all := make([]*peer, 0, len(s.m))
	for _, p := range s.m {
		all = append(all, p)
	}
	s.mu.Unlock()
	for _, p := range all {
		f(p)
	}
}

func (s *sessionStore) closeAll() {
	s.mu.Lock()
	all := s.m
	s.m, s.byOwner = map[string]*peer{}, map[string]map[string]*peer{}
	s.mu.Unlock()
	for _, p := range all {
		p.end()
	}
}

// Len is the number of open sessions.
func (s *sessionStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
