package interceptors

import (
	"sync"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

// renderedBudget bounds the cached values renderings keeps its entries
// by, in bytes (twice that at most: the generation before is kept too).
const renderedBudget = 4 << 20

// renderings keeps one callctx.Rendered per tool and cached value, so
// that a transport renders a cached result once, not on every hit. It is
// keyed by the value's bytes, not the cache key: every principal served
// the same result shares one rendering, and a new value (a reload, an
// expiry, another replica's write to a shared cache) gets a new one, so
// a rendering is never of bytes other than the ones served. Two
// generations, the older dropped when the newer outgrows renderedBudget,
// keep it bounded without a list.
type renderings struct {
	mu       sync.RWMutex
	cur, old map[renderedTool]map[string]*callctx.Rendered
	bytes    int
	budget   int
}

// renderedTool is what, besides the value, decides a result's rendering:
// its message type (the tool's output, or CallToolResponse through
// CallTool) and what the chain adds after the cache (a deprecated tool's
// warning): both the tool's.
type renderedTool struct {
	tool    *registry.Tool
	generic bool
}

func newRenderings(budget int) *renderings {
	return &renderings{cur: map[renderedTool]map[string]*callctx.Rendered{}, budget: budget}
}

// get returns the Rendered of t's cached value val.
func (r *renderings) get(t renderedTool, val []byte) *callctx.Rendered {
	r.mu.RLock()
	e := r.cur[t][string(val)]
	r.mu.RUnlock()
	if e != nil {
		return e
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.cur[t][string(val)]; e != nil {
		return e
	}
	if e = r.old[t][string(val)]; e == nil {
		e = &callctx.Rendered{}
	}
	if r.bytes+len(val) > r.budget {
		r.old, r.cur, r.bytes = r.cur, map[renderedTool]map[string]*callctx.Rendered{}, 0
	}
	byVal := r.cur[t]
	if byVal == nil {
		byVal = map[string]*callctx.Rendered{}
		r.cur[t] = byVal
	}
	byVal[string(val)] = e
	r.bytes += len(val)
	return e
}
