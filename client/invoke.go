package client

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// callToolMethod is ToolService.CallTool, whose tool is named in the
// request.
const callToolMethod = "/toolsvc.v1.ToolService/CallTool"

// unary is the client's interceptor: one logical call. It reads the
// tool's contract (side effects, response-time class), adds the headers
// and, for a tool with side effects, an idempotency key, bounds each
// attempt by the class's deadline when the caller set none, and retries
// what the server says is retryable when repeating it is safe.
func (c *Client) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	info, isTool := toolOfMethod(method)
	if method == callToolMethod {
		if r, ok := req.(*toolsvcv1.CallToolRequest); ok {
			info, isTool = c.defs.toolNamed(ctx, r.GetName(), c.definition), true
		}
	}
	co := callOptionsFrom(ctx)
	ctx, key := c.outgoing(ctx, co, isTool && info.mutates)
	attempts := c.cfg.retry.MaxAttempts
	if co != nil && co.maxAttempts > 0 {
		attempts = co.maxAttempts
	}
	// Repeating a call is safe when it changes nothing, or when its key
	// makes the server run it once.
	safe := !info.mutates || key != ""
	var perAttempt time.Duration
	if _, has := ctx.Deadline(); !has {
		perAttempt = c.cfg.deadlines.forClass(info.class)
	}
	refreshed := false
	for attempt := 1; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if perAttempt > 0 {
			actx, cancel = context.WithTimeout(ctx, perAttempt)
		}
		err := invoker(actx, method, req, reply, cc, opts...)
		cancel()
		if err == nil {
			return nil
		}
		e := errorFrom(ctx, err)
		e.Attempts = attempt
		if e.Code == CodeUnauthorized && !refreshed && c.bearer.refreshable() && ctx.Err() == nil {
			// The source's token was refused (revoked, expired early):
			// ask for a new one and send the call once more.
			c.bearer.forget()
			refreshed = true
			continue
		}
		if !e.Retryable || !safe || attempt >= attempts || e.RetryAfter > c.cfg.retry.MaxRetryAfter {
			return e
		}
		wait := c.cfg.retry.wait(attempt, e.RetryAfter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return e // the caller's deadline would pass while waiting
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return e
		case <-t.C:
		}
	}
}

// wait is how long to wait before retry number attempt (1 for the first):
// exponential backoff with jitter (half the step at random), and never
// less than the server's retryAfter (plus up to a tenth of it, so that
// callers told the same wait do not come back together).
func (p RetryPolicy) wait(attempt int, retryAfter time.Duration) time.Duration {
	d := p.InitialBackoff << min(attempt-1, 30)
	if d <= 0 || d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	d = d/2 + rand.N(d/2+1)
	if retryAfter > 0 {
		if ra := retryAfter + rand.N(min(retryAfter/10, p.InitialBackoff)+1); ra > d {
			d = ra
		}
	}
	return d
}

// outgoing returns ctx with the call's headers (the client's, the
// context's) and the idempotency key: the caller's, one already in the
// outgoing metadata, or, for a call that mutates, a fresh one. The key is
// "" when the call carries none.
func (c *Client) outgoing(ctx context.Context, co *callOptions, mutates bool) (context.Context, string) {
	var kv []string
	for k, vs := range c.cfg.headers {
		for _, v := range vs {
			kv = append(kv, k, v)
		}
	}
	var key string
	if co != nil {
		for k, vs := range co.md {
			for _, v := range vs {
				kv = append(kv, k, v)
			}
		}
		key = co.idempotencyKey
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		if vs := md.Get(HeaderIdempotencyKey); len(vs) > 0 {
			return appendPairs(ctx, kv), vs[0]
		}
	}
	if key == "" && mutates && !c.cfg.noKeys {
		key = uuid.NewString()
	}
	if key != "" {
		kv = append(kv, HeaderIdempotencyKey, key)
	}
	return appendPairs(ctx, kv), key
}

func appendPairs(ctx context.Context, kv []string) context.Context {
	if len(kv) == 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// definition asks the server for a tool's definition, once, without
// retries of its own (a failure only means the conservative guess).
func (c *Client) definition(ctx context.Context, name string) (*toolsvcv1.ToolDefinition, error) {
	resp, err := c.tools.GetTool(WithMaxAttempts(ctx, 1), &toolsvcv1.GetToolRequest{Name: name})
	if err != nil {
		return nil, err
	}
	return resp.GetTool(), nil
}
