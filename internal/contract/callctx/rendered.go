package callctx

import (
	"context"
	"sync"
	"sync/atomic"
)

// Rendered holds what transports rendered of one cached result: the
// result's bytes, once per rendering (MCP's result JSON, say), shared by
// every call the cache serves the same result to. The cache gives one
// Rendered per tool and per cached value, so a rendering made from one
// call's result is the rendering of every other call's, except for what
// the chain sets per call after the cache (the result's metadata), which
// a transport renders per call and splices in.
type Rendered struct {
	by sync.Map // rendering name -> any
}

// Load returns the rendering called name, and whether one was stored.
func (r *Rendered) Load(name string) (any, bool) { return r.by.Load(name) }

// Store keeps v as the rendering called name, unless one is already kept;
// it returns the one kept.
func (r *Rendered) Store(name string, v any) any {
	got, _ := r.by.LoadOrStore(name, v)
	return got
}

// A RenderSlot is where the chain hands a transport the Rendered of the
// cached result it answers a call with. A transport puts one in the
// context of the call it makes; the first call of the chain that runs in
// that context claims it (a call a tool makes in turn, with the same
// context, cannot fill it), and fills it when it answers from the cache.
type RenderSlot struct {
	owner atomic.Pointer[any]
	r     atomic.Pointer[Rendered]
}

// Claim makes owner the slot's owner if it has none, and reports whether
// owner owns it.
func (s *RenderSlot) Claim(owner any) bool {
	p := &owner
	if s.owner.CompareAndSwap(nil, p) {
		return true
	}
	return *s.owner.Load() == owner
}

// Fill hands r to the transport.
func (s *RenderSlot) Fill(r *Rendered) { s.r.Store(r) }

// Rendered returns what the chain filled in, nil when the call was not
// answered from the cache.
func (s *RenderSlot) Rendered() *Rendered { return s.r.Load() }

type renderSlotKey struct{}

// WithRenderSlot returns ctx carrying s.
func WithRenderSlot(ctx context.Context, s *RenderSlot) context.Context {
	return context.WithValue(ctx, renderSlotKey{}, s)
}

// RenderSlotFrom returns the slot ctx carries, nil when none.
func RenderSlotFrom(ctx context.Context) *RenderSlot {
	s, _ := ctx.Value(renderSlotKey{}).(*RenderSlot)
	return s
}
