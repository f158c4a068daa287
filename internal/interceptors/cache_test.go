package interceptors_test

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/store/cache"
)

// cacheEnv is the cache step over an in-memory cache, with one fake
// handler that answers a fresh response (a new memory id) every call.
type cacheEnv struct {
	step grpcStep
	reg  *prometheus.Registry
	next *fakeNext
}

type grpcStep = func(context.Context, any, *interceptors.Call) (any, error)

func newCacheEnv(t *testing.T) *cacheEnv {
	t.Helper()
	c := cache.NewMemory(1 << 20)
	reg := prometheus.NewRegistry()
	step := interceptors.CacheStep(c, cache.NewGroup(c), interceptors.NewMetrics(reg), slog.New(slog.NewTextHandler(io.Discard, nil)))
	env := &cacheEnv{reg: reg}
	var n int
	env.next = &fakeNext{resp: func(context.Context, any) (any, error) {
		n++
		return &memoryv1.SearchMemoriesResponse{Data: &memoryv1.SearchMemoriesData{Success: true, TotalCount: uint32(n)}, AgentHints: okHints()}, nil
	}}
	env.step = func(ctx context.Context, req any, c *interceptors.Call) (any, error) {
		return runStep(ctx, step, c, req, env.next)
	}
	return env
}

func (e *cacheEnv) search(t *testing.T, tool *registry.Tool, p *auth.Principal, query string) (*memoryv1.SearchMemoriesResponse, *interceptors.Call) {
	t.Helper()
	req := &memoryv1.SearchMemoriesRequest{Query: query}
	ids := maps.Clone(p.Identifiers) // the call's facts, as auth completes them
	if ids == nil {
		ids = map[string]string{}
	}
	ids[callctx.KeyTenant] = p.Tenant
	c := &interceptors.Call{Tool: tool, Principal: p, Request: req,
		Facts: callctx.Facts{Principal: p, Tenant: p.Tenant, Subject: p.Subject, Identifiers: ids}}
	out, err := e.step(context.Background(), req, c)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*memoryv1.SearchMemoriesResponse), c
}

func (e *cacheEnv) lookups(t *testing.T, tool, result string) float64 {
	return counter(t, e.reg, "toolsvc_cache_requests_total", map[string]string{"tool": tool, "result": result})
}

func TestCacheHitServesTheStoredResult(t *testing.T) {
	env := newCacheEnv(t)
	tool := memTool(t, searchMethod, nil)
	first, c1 := env.search(t, tool, fullPrincipal(), "coffee")
	second, c2 := env.search(t, tool, fullPrincipal(), "coffee")
	if env.next.count() != 1 {
		t.Fatalf("handler ran %d times, want once", env.next.count())
	}
	if c1.Cached || !c2.Cached {
		t.Errorf("cached first %v second %v, want false then true", c1.Cached, c2.Cached)
	}
	if second.GetData().GetTotalCount() != first.GetData().GetTotalCount() {
		t.Errorf("hit answered %v, want the stored %v", second.GetData(), first.GetData())
	}
	if h, m := env.lookups(t, tool.Name, "hit"), env.lookups(t, tool.Name, "miss"); h != 1 || m != 1 {
		t.Errorf("hits %v misses %v, want 1 and 1", h, m)
	}

	// Other arguments are another entry.
	if _, c := env.search(t, tool, fullPrincipal(), "tea"); c.Cached {
		t.Error("another query was served from the cache")
	}
}

func TestCacheKeyedByTenantAndScope(t *testing.T) {
	tool := memTool(t, searchMethod, nil)
	for name, other := range map[string]func(*auth.Principal){
		"tenant":     func(p *auth.Principal) { p.Tenant = "globex" },
		"subject":    func(p *auth.Principal) { p.Subject = "bob" },
		"identifier": func(p *auth.Principal) { p.Identifiers = map[string]string{auth.IdentifierUserID: "u2"} },
	} {
		t.Run(name, func(t *testing.T) {
			env := newCacheEnv(t)
			env.search(t, tool, fullPrincipal(), "coffee")
			p := fullPrincipal()
			other(p)
			if _, c := env.search(t, tool, p, "coffee"); c.Cached {
				t.Errorf("another %s was served the first caller's result", name)
			}
			if env.next.count() != 2 {
				t.Errorf("handler ran %d times, want 2", env.next.count())
			}
		})
	}
}

func TestCacheDoesNotStoreErrorsOrMutations(t *testing.T) {
	env := newCacheEnv(t)
	tool := memTool(t, searchMethod, nil)
	refusal := toolerr.New(toolerr.ProviderError, "backend down")
	ok := env.next.resp
	env.next.resp = func(context.Context, any) (any, error) { return nil, refusal }
	req := &memoryv1.SearchMemoriesRequest{Query: "coffee"}
	if _, err := env.step(context.Background(), req, &interceptors.Call{Tool: tool, Principal: fullPrincipal(), Request: req}); err == nil {
		t.Fatal("the handler's error was lost")
	}
	env.next.resp = ok
	if _, c := env.search(t, tool, fullPrincipal(), "coffee"); c.Cached {
		t.Error("a failed call's answer was cached")
	}

	// Not cacheable: always runs.
	uncached := memTool(t, searchMethod, func(tl *registry.Tool) { tl.Spec.Cacheable = false })
	env.search(t, uncached, fullPrincipal(), "x")
	if _, c := env.search(t, uncached, fullPrincipal(), "x"); c.Cached {
		t.Error("a tool that is not cacheable was served from the cache")
	}
	if got := env.lookups(t, uncached.Name, "hit"); got != 0 {
		t.Errorf("%v cache hits counted; none was served from the cache", got)
	}
}

func TestCacheMutationInvalidatesItsDomain(t *testing.T) {
	env := newCacheEnv(t)
	search := memTool(t, searchMethod, nil)
	add := memTool(t, addMethod, nil)
	if len(add.Invalidates) == 0 || add.Invalidates[0] != search.Domain {
		t.Fatalf("fixture: %s invalidates %v, want %s", add.Name, add.Invalidates, search.Domain)
	}
	env.search(t, search, fullPrincipal(), "coffee")

	// Another tenant's mutation leaves this tenant's entries.
	globex := fullPrincipal()
	globex.Tenant = "globex"
	addReq := &memoryv1.AddMemoryRequest{}
	if _, err := env.step(context.Background(), addReq, &interceptors.Call{Tool: add, Principal: globex, Request: addReq}); err != nil {
		t.Fatal(err)
	}
	if _, c := env.search(t, search, fullPrincipal(), "coffee"); !c.Cached {
		t.Fatal("another tenant's mutation invalidated this tenant's cache")
	}

	// A failed mutation changes nothing.
	ok := env.next.resp
	env.next.resp = func(context.Context, any) (any, error) { return nil, toolerr.New(toolerr.Conflict, "no") }
	_, _ = env.step(context.Background(), addReq, &interceptors.Call{Tool: add, Principal: fullPrincipal(), Request: addReq})
	env.next.resp = ok
	if _, c := env.search(t, search, fullPrincipal(), "coffee"); !c.Cached {
		t.Fatal("a failed mutation invalidated the cache")
	}

	if _, err := env.step(context.Background(), addReq, &interceptors.Call{Tool: add, Principal: fullPrincipal(), Request: addReq}); err != nil {
		t.Fatal(err)
	}
	if _, c := env.search(t, search, fullPrincipal(), "coffee"); c.Cached {
		t.Error("a successful mutation left the tenant's cached query")
	}
}
