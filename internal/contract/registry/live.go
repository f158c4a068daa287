package registry

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Snapshots gives the registry in service at the moment of the call. A
// *Registry is its own, fixed snapshot; a *Live changes as a whole when
// tools appear or disappear (upstreams reloaded). A call resolves its tool
// in one snapshot and keeps it to the end, so a swap never changes a call
// in flight.
type Snapshots interface {
	Load() *Registry
}

// Watched is a Snapshots that tells of each change (a *Live): a reader
// that keeps something derived from the registry and must act when it
// changes (the MCP bridge tells its clients the tool list changed)
// watches it; one that can rebuild on demand compares snapshots instead.
type Watched interface {
	Snapshots
	// Watch calls fn with each registry stored from now on, once it is
	// in service; stop ends that.
	Watch(fn func(*Registry)) (stop func())
}

// Load returns r: a registry is its own snapshot.
func (r *Registry) Load() *Registry { return r }

// Live is the registry of a running service: an atomic pointer to the
// current snapshot, replaced by Store, the one holder every reader reads.
// Safe for concurrent use.
type Live struct {
	p atomic.Pointer[Registry]

	storeMu sync.Mutex // orders stores and their notifications
	mu      sync.Mutex // guards watchers and next
	// watchers are called on each Store, in the order they watched.
	watchers map[uint64]func(*Registry)
	next     uint64
}

// NewLive returns a Live serving r.
func NewLive(r *Registry) *Live {
	l := &Live{}
	l.p.Store(r)
	return l
}

// Load returns the current snapshot.
func (l *Live) Load() *Registry { return l.p.Load() }

// Store makes r the current snapshot, then calls every watcher with it
// and returns once they have returned. A watcher must not Store.
func (l *Live) Store(r *Registry) {
	l.storeMu.Lock()
	defer l.storeMu.Unlock()
	l.p.Store(r)
	l.mu.Lock()
	ids := make([]uint64, 0, len(l.watchers))
	for id := range l.watchers {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		l.mu.Lock()
		fn := l.watchers[id]
		l.mu.Unlock()
		if fn != nil {
			fn(r)
		}
	}
}

// Watch calls fn with each registry stored from now on (see Watched).
func (l *Live) Watch(fn func(*Registry)) (stop func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watchers == nil {
		l.watchers = map[uint64]func(*Registry){}
	}
	id := l.next
	l.next++
	l.watchers[id] = fn
	return func() {
		l.mu.Lock()
		delete(l.watchers, id)
		l.mu.Unlock()
	}
}
