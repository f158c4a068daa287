package interceptors_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
)

func newRateLimit(t *testing.T, l ratelimit.Limiter, ceiling ratelimit.Limit) (func(*interceptors.Call) (*fakeNext, error), *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	step := interceptors.RateLimitStep(l, ceiling, interceptors.NewMetrics(reg))
	return func(c *interceptors.Call) (*fakeNext, error) {
		next := &fakeNext{}
		_, err := runStep(context.Background(), step, c, nil, next)
		if err != nil && next.count() != 0 {
			t.Errorf("refused (%v) but the handler ran", err)
		}
		return next, err
	}, reg
}

func limitedTool(t *testing.T, max uint32) *registry.Tool {
	return memTool(t, searchMethod, func(tl *registry.Tool) {
		tl.Spec.RateLimit = &toolsvcv1.RateLimit{MaxCalls: max, WindowMs: 60_000}
	})
}

func TestRateLimitPerToolAndPrincipal(t *testing.T) {
	call, reg := newRateLimit(t, ratelimit.NewMemory(), ratelimit.Limit{})
	tool := limitedTool(t, 1)
	if _, err := call(&interceptors.Call{Tool: tool, Principal: fullPrincipal()}); err != nil {
		t.Fatalf("first call: %v", err)
	}
	c := &interceptors.Call{Tool: tool, Principal: fullPrincipal()}
	_, err := call(c)
	e := wantCode(t, err, toolerr.RateLimited)
	if e.RetryAfter <= 0 || e.RetryAfter > time.Minute {
		t.Errorf("RetryAfter %v, want within the window", e.RetryAfter)
	}
	if e.Details["maxCalls"] != 1 || e.Details["windowMs"] != int64(60_000) {
		t.Errorf("details %v, want maxCalls 1 windowMs 60000", e.Details)
	}
	if c.Decision != "deny" || c.Reason != "rate limited" {
		t.Errorf("decision %q/%q, want deny/rate limited", c.Decision, c.Reason)
	}
	if got := counter(t, reg, "toolsvc_rate_limited_total", map[string]string{"tool": tool.Name}); got != 1 {
		t.Errorf("toolsvc_rate_limited_total{tool=%q} = %v, want 1", tool.Name, got)
	}

	// Another principal, or another tenant's principal of the same
	// subject, has a budget of its own.
	other := fullPrincipal()
	other.Subject = "bob"
	if _, err := call(&interceptors.Call{Tool: tool, Principal: other}); err != nil {
		t.Errorf("other subject: %v", err)
	}
	otherTenant := fullPrincipal()
	otherTenant.Tenant = "globex"
	if _, err := call(&interceptors.Call{Tool: tool, Principal: otherTenant}); err != nil {
		t.Errorf("other tenant: %v", err)
	}
}

func TestRateLimitCeilingOverAllTools(t *testing.T) {
	call, _ := newRateLimit(t, ratelimit.NewMemory(), ratelimit.Limit{Max: 2, Window: time.Minute})
	unlimited := func(tl *registry.Tool) { tl.Spec.RateLimit = nil }
	search, add := memTool(t, searchMethod, unlimited), memTool(t, addMethod, unlimited)
	for i, tool := range []*registry.Tool{search, add} {
		if _, err := call(&interceptors.Call{Tool: tool, Principal: fullPrincipal()}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err := call(&interceptors.Call{Tool: search, Principal: fullPrincipal()})
	wantCode(t, err, toolerr.RateLimited)
}

func TestRateLimitSkipsCallsWithoutToolOrPrincipal(t *testing.T) {
	call, _ := newRateLimit(t, failingLimiter{}, ratelimit.Limit{Max: 1, Window: time.Minute})
	for _, c := range []*interceptors.Call{{Principal: fullPrincipal()}, {Tool: limitedTool(t, 1)}} {
		if next, err := call(c); err != nil || next.count() != 1 {
			t.Errorf("err %v, handler ran %d times; want passed untouched", err, next.count())
		}
	}
}

// failingLimiter is a backend that is down, with fail-closed fallback.
type failingLimiter struct{ retry time.Duration }

func (f failingLimiter) Allow(context.Context, string, ratelimit.Limit) (ratelimit.Decision, error) {
	return ratelimit.Decision{Degraded: true, RetryAfter: f.retry}, errors.New("redis: connection refused")
}
func (failingLimiter) Close() error { return nil }

func TestRateLimitFailClosedIsAProviderError(t *testing.T) {
	call, reg := newRateLimit(t, failingLimiter{}, ratelimit.Limit{})
	tool := limitedTool(t, 100)
	c := &interceptors.Call{Tool: tool, Principal: &auth.Principal{Subject: "s", Tenant: "t"}}
	_, err := call(c)
	e := wantCode(t, err, toolerr.ProviderError)
	if e.RetryAfter != time.Second {
		t.Errorf("RetryAfter %v, want the 1s default", e.RetryAfter)
	}
	if c.Reason != "rate limiter unavailable (fail closed)" {
		t.Errorf("reason %q", c.Reason)
	}
	if got := counter(t, reg, "toolsvc_rate_limited_total", nil); got != 0 {
		t.Errorf("an unavailable limiter counted %v rate-limited calls", got)
	}

	call, _ = newRateLimit(t, failingLimiter{retry: 5 * time.Second}, ratelimit.Limit{})
	_, err = call(&interceptors.Call{Tool: tool, Principal: fullPrincipal()})
	if e := wantCode(t, err, toolerr.ProviderError); e.RetryAfter != 5*time.Second {
		t.Errorf("RetryAfter %v, want the fallback's 5s", e.RetryAfter)
	}
}
