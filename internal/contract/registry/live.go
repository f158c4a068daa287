package registry

import "sync/atomic"

// Snapshots gives the registry in service at the moment of the call. A
// *Registry is its own, fixed snapshot; a *Live changes as a whole when
// tools appear or disappear (upstreams reloaded). A call resolves its tool
// in one snapshot and keeps it to the end, so a swap never changes a call
// in flight.
type Snapshots interface {
	Load() *Registry
}

// Load returns r: a registry is its own snapshot.
func (r *Registry) Load() *Registry { return r }

// Live is the registry of a running service: an atomic pointer to the
// current snapshot, replaced by Store. Safe for concurrent use.
type Live struct {
	p atomic.Pointer[Registry]
}

// NewLive returns a Live serving r.
func NewLive(r *Registry) *Live {
	l := &Live{}
	l.p.Store(r)
	return l
}

// Load returns the current snapshot.
func (l *Live) Load() *Registry { return l.p.Load() }

// Store makes r the current snapshot.
func (l *Live) Store(r *Registry) { l.p.Store(r) }
