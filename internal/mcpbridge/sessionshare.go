package mcpbridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// A fleet of replicas shares its sessions through a SessionRegistry (Redis)
// so that a client behind a balancer that does not pin it can send each
// request of a session to any replica. Every replica keeps the sessions
// it has seen in its sessionStore as a cache: a request finds its session
// there and asks the registry only when the entry was last confirmed more
// than SessionRecheck ago (which also keeps it alive there). Changes are
// told to the fleet on the Fanout: a session ended (DELETE, eviction) is
// dropped from every cache at once, a log level set on one replica is the
// level of every other, and a change of the tool set reaches every
// replica's event streams and listeners. A fanout message lost while a
// replica reconnects to Redis is covered by the recheck: after a
// reconnection every cached session is rechecked at its next use.
//
// Shared sessions rather than sealed session ids: a sealed id could be
// checked anywhere without Redis, but DELETE must end the session
// everywhere and logging/setLevel must follow it, which both need shared
// state (a revocation list, the level) anyway; and an id that carries no
// state keeps the per-principal bound enforceable.

// SessionRegistry shares the sessions of stateful Streamable HTTP between
// replicas (redisfleet.Sessions implements it over Redis). Fields are strings;
// "owner" is the owner.
type SessionRegistry interface {
	// Create records session id of owner with fields, alive for idle unless
	// touched; it returns the sessions of owner it evicted beyond perOwner.
	Create(ctx context.Context, id, owner string, fields map[string]string, idle time.Duration, perOwner int) (ended []string, err error)
	// Load returns session id's fields, nil when it does not exist.
	Load(ctx context.Context, id string) (map[string]string, error)
	// Update sets fields of a session that exists; false when it ended.
	Update(ctx context.Context, id string, fields map[string]string) (bool, error)
	// Touch keeps session id alive for another idle and returns its
	// fields; nil when it ended.
	Touch(ctx context.Context, id, owner string, idle time.Duration) (map[string]string, error)
	// Delete ends session id of owner.
	Delete(ctx context.Context, id, owner string) error
}

// Fanout carries short messages to every replica, this one included
// (redisfleet.Bus implements it over Redis pub/sub).
type Fanout interface {
	Publish(ctx context.Context, msg string) error
	// Listen calls heard with every message until ctx ends, and subscribed
	// at every (re)subscription: again is true after a reconnection.
	Listen(ctx context.Context, heard func(msg string), subscribed func(again bool))
}

// levelField is the log level of a session's registry fields (-1: none).
func levelField(fields map[string]string) int32 {
	if lvl, err := strconv.Atoi(fields[fieldLevel]); err == nil && lvl >= -1 && lvl < len(logLevels) {
		return int32(lvl)
	}
	return -1
}

// Session fields in the registry.
const (
	redisOwner         = "owner"
	fieldRevision      = "revision"
	fieldClientName    = "clientName"
	fieldClientVersion = "clientVersion"
	fieldLevel         = "level"
	// fieldAsk is what the client may be asked (askCaps.String).
	fieldAsk = "ask"
)

// Fanout messages: "end <session>", "level <session> <n>", "tools <replica>".
const (
	fanEnd   = "end"
	fanLevel = "level"
	fanTools = "tools"
)

// errRegistry is a session registry that did not answer: the request is
// refused with 503, retryable.
var errRegistry = errors.New("session registry unavailable")

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// openSession opens a session of owner: in the registry when shared
// (evicting owner's least recently used ones beyond the bound, everywhere),
// else in memory as create does.
//
// Shared, the registry admits the session and evicts the others in one
// step (redisfleet.Sessions.Create), and this replica watches the new id from
// before it asks: another replica's admission may evict the new session
// and tell the fleet before the registry's answer arrives here, and that
// end must not be lost, or this replica would serve from its cache a
// session the registry has ended (one more than the bound). A
// session ended so soon is not cached: the client's next request gets 404
// and it initializes again, as for any evicted session.
func (b *Bridge) openSession(ctx context.Context, owner string) (*peer, error) {
	s := b.sessions
	if b.cfg.Sessions == nil {
		return s.create(owner), nil
	}
	p := newPeer(newSessionID(), owner)
	since := s.watch(p.id)
	ended, err := b.cfg.Sessions.Create(ctx, p.id, owner, map[string]string{fieldLevel: "-1"}, s.idle, s.perOwner)
	if h := b.hooks.Load(); h != nil && h.admitted != nil && err == nil {
		h.admitted(p.id)
	}
	s.mu.Lock()
	gone, unheard := s.settle(p.id, since)
	if err == nil && !gone {
		if !unheard {
			p.checked.Store(time.Now().UnixNano())
		}
		s.insert(p)
	}
	s.mu.Unlock()
	if err != nil {
		b.log.WarnContext(ctx, "mcp session registry", slog.String("op", "create"), slog.String("error", err.Error()))
		return nil, errRegistry
	}
	if gone {
		p.end()
	}
	for _, id := range ended {
		s.forget(id)
		b.publish(fanEnd + " " + id)
	}
	return p, nil
}

// findSession returns session id of owner. Shared, a cached session
// confirmed within SessionRecheck is served from memory; an older one is
// touched in the registry (one round trip), and an unknown one loaded
// from it, watched meanwhile as openSession watches a new one. A session
// of another owner is missing, as in memory.
func (b *Bridge) findSession(ctx context.Context, id, owner string) (*peer, bool, error) {
	s := b.sessions
	if b.cfg.Sessions == nil {
		p, ok := s.get(id, owner)
		return p, ok, nil
	}
	now := time.Now()
	s.mu.Lock()
	p, cached := s.m[id]
	s.mu.Unlock()
	if cached {
		if p.owner != owner {
			return nil, false, nil
		}
		if now.UnixNano()-p.checked.Load() > int64(b.cfg.SessionRecheck) {
			since := s.subscriptions.Load()
			fields, err := b.cfg.Sessions.Touch(ctx, id, owner, s.idle)
			switch {
			case err != nil:
				// Serve from the cache: a registry outage should not end
				// every conversation; the next request checks again.
				b.log.WarnContext(ctx, "mcp session registry", slog.String("op", "touch"), slog.String("error", err.Error()))
			case fields == nil || fields[redisOwner] != owner:
				s.forget(id)
				return nil, false, nil
			default:
				// A level message lost on the fanout is caught up here.
				p.level.Store(levelField(fields))
				if s.subscriptions.Load() == since { // else an end may have gone unheard meanwhile
					p.checked.Store(now.UnixNano())
				}
			}
		}
		p.touch()
		return p, true, nil
	}
	since := s.watch(id)
	fields, err := b.cfg.Sessions.Load(ctx, id)
	if err != nil || fields == nil || fields[redisOwner] != owner {
		s.mu.Lock()
		s.settle(id, since)
		s.mu.Unlock()
		if err != nil {
			b.log.WarnContext(ctx, "mcp session registry", slog.String("op", "load"), slog.String("error", err.Error()))
			return nil, false, errRegistry
		}
		return nil, false, nil
	}
	p = newPeer(id, owner)
	p.setClient(clientInfo{Name: fields[fieldClientName], Version: fields[fieldClientVersion]}, fields[fieldRevision])
	p.setAskCaps(askCapsField(fields[fieldAsk]))
	p.level.Store(levelField(fields))
	s.mu.Lock()
	defer s.mu.Unlock()
	gone, unheard := s.settle(id, since)
	if gone {
		return nil, false, nil // ended while the registry answered
	}
	if !unheard {
		p.checked.Store(now.UnixNano())
	}
	if q, ok := s.m[id]; ok {
		return q, true, nil // loaded by a concurrent request meanwhile
	}
	s.insert(p)
	return p, true, nil
}

// endSession ends session id of owner: everywhere when shared.
func (b *Bridge) endSession(ctx context.Context, id, owner string) (bool, error) {
	if b.cfg.Sessions == nil {
		return b.sessions.remove(id, owner), nil
	}
	if _, ok, err := b.findSession(ctx, id, owner); !ok || err != nil {
		return false, err
	}
	if err := b.cfg.Sessions.Delete(ctx, id, owner); err != nil {
		b.log.WarnContext(ctx, "mcp session registry", slog.String("op", "delete"), slog.String("error", err.Error()))
		return false, errRegistry
	}
	b.sessions.forget(id)
	b.publish(fanEnd + " " + id)
	return true, nil
}

// saveSession writes fields of session p to the registry, when shared.
func (b *Bridge) saveSession(p *peer, fields map[string]string) error {
	if b.cfg.Sessions == nil || p == nil || p.id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := b.cfg.Sessions.Update(ctx, p.id, fields); err != nil {
		b.log.WarnContext(ctx, "mcp session registry", slog.String("op", "update"), slog.String("error", err.Error()))
		return errRegistry
	}
	return nil
}

// publish tells the fleet msg; a failure is logged (the recheck and the
// registry still hold the truth).
func (b *Bridge) publish(msg string) {
	if b.cfg.Fanout == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := b.cfg.Fanout.Publish(ctx, msg); err != nil {
		b.log.Warn("mcp fanout", slog.String("message", msg), slog.String("error", err.Error()))
	}
}

// listenFanout applies the fleet's messages until ctx ends or the bridge
// closes. ready is closed at the first subscription.
func (b *Bridge) listenFanout(ctx context.Context, ready chan<- struct{}) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	first := true
	b.cfg.Fanout.Listen(ctx, b.heard, func(bool) {
		if first {
			first = false
			close(ready)
		}
		// What was published before this subscription was not heard: at
		// a reconnection, and at the first subscription too, since the
		// replica serves requests (and caches the sessions they open or
		// load) while it subscribes. Every cached session is checked
		// with the registry at its next use.
		b.sessions.recheckAll()
	})
	if first {
		close(ready)
	}
}

// heard applies one fanout message.
func (b *Bridge) heard(msg string) {
	kind, rest, _ := strings.Cut(msg, " ")
	switch kind {
	case fanEnd:
		b.sessions.forget(rest)
	case fanLevel:
		id, n, _ := strings.Cut(rest, " ")
		lvl, err := strconv.Atoi(n)
		if err != nil || lvl < -1 || lvl >= len(logLevels) {
			return
		}
		b.sessions.mu.Lock()
		p := b.sessions.m[id]
		b.sessions.mu.Unlock()
		if p != nil {
			p.level.Store(int32(lvl))
		}
	case fanTools:
		if rest != b.replica {
			b.toolsChanged()
		}
	case fanAnswer:
		b.heardAnswer(rest)
	case fanResume:
		b.heardResume(rest)
	case fanResumed:
		b.heardResumed(rest)
	}
	if h := b.hooks.Load(); h != nil && h.heard != nil {
		h.heard(msg)
	}
}

// insert adds p to the store; s.mu must be held.
func (s *sessionStore) insert(p *peer) {
	s.m[p.id] = p
	own := s.byOwner[p.owner]
	if own == nil {
		own = map[string]*peer{}
		s.byOwner[p.owner] = own
	}
	own[p.id] = p
}

// forget drops session id from the store and ends it here; a request
// asking the registry about it meanwhile learns that it ended (watch).
func (s *sessionStore) forget(id string) {
	s.mu.Lock()
	p, ok := s.m[id]
	if ok {
		s.drop(p)
	}
	if w := s.watched[id]; w != nil {
		w.ended = true
	}
	s.mu.Unlock()
	if ok {
		p.end()
	}
}

// watch is the registry being asked about a session by n requests of
// this replica, and whether the session ended (forget) meanwhile.
type watch struct {
	n     int
	ended bool
}

// watch notes that a request is about to ask the registry about session
// id; settle, once it has the answer, says whether the session ended
// meanwhile. An end told by the fleet can arrive before the registry's
// answer that the session exists (another replica evicted it in between),
// and the cache must not then keep it. The result is the fanout
// subscription the watch began under, for settle.
func (s *sessionStore) watch(id string) (since uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.watched[id]
	if w == nil {
		w = &watch{}
		s.watched[id] = w
	}
	w.n++
	return s.subscriptions.Load()
}

// settle ends a watch of id begun under subscription since, and reports
// whether the session ended during it, and whether its end may have gone
// unheard: the fanout (re)subscribed meanwhile, and what was published
// before that was lost, so the session is to be checked with the registry
// at its next use. s.mu must be held.
func (s *sessionStore) settle(id string, since uint64) (ended, unheard bool) {
	unheard = s.subscriptions.Load() != since
	w := s.watched[id]
	if w == nil {
		return false, unheard
	}
	if w.n--; w.n == 0 {
		delete(s.watched, id)
	}
	return w.ended, unheard
}

// recheckAll has every cached session checked with the registry at its
// next use, and every watch under way settle its session so: the fanout
// has just (re)subscribed, and what it published before was not heard.
func (s *sessionStore) recheckAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subscriptions.Add(1)
	for _, p := range s.m {
		p.checked.Store(0)
	}
}
