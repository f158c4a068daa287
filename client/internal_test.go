package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// TestErrorTableMatchesServer keeps the client's copy of the error table
// equal to the server's (internal/contract/toolerr).
func TestErrorTableMatchesServer(t *testing.T) {
	if len(table) != len(toolerr.Codes()) {
		t.Fatalf("the client knows %d codes, the server %d", len(table), len(toolerr.Codes()))
	}
	for _, c := range toolerr.Codes() {
		info, ok := table[Code(c)]
		if !ok {
			t.Errorf("code %s missing", c)
			continue
		}
		if info.grpc != c.GRPCCode() || info.retryable != c.Retryable() || info.kind != c.Kind() {
			t.Errorf("%s: client %+v, server grpc %s retryable %v kind %s", c, info, c.GRPCCode(), c.Retryable(), c.Kind())
		}
	}
	for g := codes.OK; g <= codes.Unauthenticated; g++ {
		if got, want := codeOf(g), Code(toolerr.FromGRPC(g)); got != want {
			t.Errorf("gRPC %s: client %s, server %s", g, got, want)
		}
	}
}

// TestHeadersMatchServer keeps the header names equal to the ones the
// server reads (internal/interceptors).
func TestHeadersMatchServer(t *testing.T) {
	pairs := [][2]string{
		{HeaderAuthorization, wire.HeaderAuthorization}, {HeaderAgentID, wire.HeaderAgentID},
		{HeaderAgentVersion, wire.HeaderAgentVersion}, {HeaderCorrelationID, wire.HeaderCorrelationID},
		{HeaderSessionID, wire.HeaderSessionID}, {HeaderUserID, wire.HeaderUserID},
		{HeaderOrgID, wire.HeaderOrgID}, {HeaderTeamID, wire.HeaderTeamID},
		{HeaderProjectID, wire.HeaderProjectID}, {HeaderIdempotencyKey, wire.HeaderIdempotencyKey},
	}
	for _, p := range pairs {
		if p[0] != p[1] {
			t.Errorf("client header %q, server %q", p[0], p[1])
		}
	}
}

// TestErrorFromBoundaryStatus reads statuses made by the server's
// boundary function (toolerr.StatusFor) and by grpc-go.
func TestErrorFromBoundaryStatus(t *testing.T) {
	ctx := context.Background()
	limited := toolerr.New(toolerr.RateLimited, "slow down")
	limited.RetryAfter = 1500 * time.Millisecond
	tests := []struct {
		name      string
		err       error
		code      Code
		retryable bool
		after     time.Duration
		field     string
	}{
		{"validation", toolerr.StatusFor(toolerr.Invalid("content", "string.min_len", "must not be empty"), toolerr.Facts{TraceID: "t1"}).Err(),
			CodeInvalidInput, false, 0, "content"},
		{"rate limited", toolerr.StatusFor(limited, toolerr.Facts{}).Err(), CodeRateLimited, true, 1500 * time.Millisecond, ""},
		{"not found", toolerr.StatusFor(toolerr.UnknownTool("nope-tool"), toolerr.Facts{}).Err(), CodeNotFound, false, 0, ""},
		{"connection lost (grpc-go)", status.Error(codes.Unavailable, "connection reset"), CodeProviderError, true, 0, ""},
		{"message too large (grpc-go)", status.Error(codes.ResourceExhausted, "grpc: received message larger than max"), CodeInvalidInput, false, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := errorFrom(ctx, tc.err)
			if e.Code != tc.code || e.Retryable != tc.retryable || e.RetryAfter != tc.after {
				t.Fatalf("got %s retryable %v after %s, want %s %v %s", e.Code, e.Retryable, e.RetryAfter, tc.code, tc.retryable, tc.after)
			}
			if tc.field != "" && (len(e.FieldViolations) != 1 || e.FieldViolations[0].GetField() != tc.field) {
				t.Errorf("field violations %v, want %s", e.FieldViolations, tc.field)
			}
			if CodeOf(e) != tc.code || status.Code(e) != table[tc.code].grpc && tc.code != CodeInvalidInput {
				t.Errorf("CodeOf %s, status.Code %s", CodeOf(e), status.Code(e))
			}
			if e.ToolError().GetCode() != string(tc.code) {
				t.Errorf("ToolError() = %v", e.ToolError())
			}
		})
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	e := errorFrom(cctx, status.Error(codes.Canceled, "context canceled"))
	if !errors.Is(e, context.Canceled) || e.Retryable {
		t.Errorf("a call the caller cancelled: %v (retryable %v), want context.Canceled, not retryable", e, e.Retryable)
	}
}

// TestRetryWait: backoff doubles with jitter up to its cap, and never
// waits less than the server's retryAfter.
func TestRetryWait(t *testing.T) {
	p := DefaultRetryPolicy
	for attempt := 1; attempt <= 8; attempt++ {
		step := min(p.InitialBackoff<<(attempt-1), p.MaxBackoff)
		for range 50 {
			if d := p.wait(attempt, 0); d < step/2 || d > step {
				t.Fatalf("attempt %d: waited %s, want in [%s, %s]", attempt, d, step/2, step)
			}
			if d := p.wait(attempt, 2*time.Second); d < 2*time.Second || d > max(step, 2*time.Second+p.InitialBackoff) {
				t.Fatalf("attempt %d with retryAfter 2s: waited %s", attempt, d)
			}
		}
	}
}

// TestToolOfMethod reads the (toolsvc.v1.tool) option of the generated
// descriptors.
func TestToolOfMethod(t *testing.T) {
	if info, ok := toolOfMethod(memoryv1.MemoryService_AddMemory_FullMethodName); !ok || !info.mutates || info.name != "add-memory" {
		t.Errorf("AddMemory: %+v %v, want the add-memory tool, a mutation", info, ok)
	}
	if info, ok := toolOfMethod(memoryv1.MemoryService_SearchMemories_FullMethodName); !ok || info.mutates || info.class == "" {
		t.Errorf("SearchMemories: %+v %v, want a query with a class", info, ok)
	}
	if _, ok := toolOfMethod(toolsvcv1.ToolService_ListTools_FullMethodName); ok {
		t.Error("ListTools is not a tool")
	}
	if info, ok := linkedTool("delete-memory"); !ok || !info.mutates {
		t.Errorf("delete-memory: %+v %v", info, ok)
	}
}

// script is a fake invoker: it answers each attempt with the next error
// and records the idempotency key each attempt carried.
type script struct {
	errs []error
	keys []string
}

func (s *script) invoke(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
	md, _ := metadata.FromOutgoingContext(ctx)
	s.keys = append(s.keys, firstOf(md.Get(HeaderIdempotencyKey)))
	if len(s.keys) > len(s.errs) {
		return nil
	}
	return s.errs[len(s.keys)-1]
}

func firstOf(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// TestRetries drives the interceptor with scripted failures.
func TestRetries(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "connection reset")
	final := toolerr.StatusFor(toolerr.New(toolerr.Internal, "internal error"), toolerr.Facts{}).Err()
	add, search := memoryv1.MemoryService_AddMemory_FullMethodName, memoryv1.MemoryService_SearchMemories_FullMethodName
	tests := []struct {
		name     string
		opts     []Option
		method   string
		errs     []error
		attempts int
		ok       bool
	}{
		{"a query retried until it succeeds", nil, search, []error{unavailable, unavailable}, 3, true},
		{"a keyed write retried with its key", nil, add, []error{unavailable}, 2, true},
		{"a write without a key never retried", []Option{WithoutIdempotencyKeys()}, add, []error{unavailable}, 1, false},
		{"a non-retryable error returned at once", nil, search, []error{final}, 1, false},
		{"up to the bound", []Option{WithRetryPolicy(RetryPolicy{MaxAttempts: 2})}, search, []error{unavailable, unavailable, unavailable}, 2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]Option{WithInsecure(), WithRetryPolicy(RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})}, tc.opts...)
			c, err := New("passthrough:///unused", opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s := &script{errs: tc.errs}
			err = c.unary(context.Background(), tc.method, nil, nil, nil, s.invoke)
			if (err == nil) != tc.ok || len(s.keys) != tc.attempts {
				t.Fatalf("err %v after %d attempts, want ok %v after %d", err, len(s.keys), tc.ok, tc.attempts)
			}
			for _, k := range s.keys {
				if k != s.keys[0] {
					t.Errorf("keys %q: a retry must carry the first attempt's key", s.keys)
				}
			}
			if wantKey := tc.method == add && len(tc.opts) == 0; (s.keys[0] != "") != wantKey {
				t.Errorf("key %q, want one: %v", s.keys[0], wantKey)
			}
		})
	}
	c, err := New("passthrough:///unused", WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := &script{}
	for range 2 {
		if err := c.unary(context.Background(), add, nil, nil, nil, s.invoke); err != nil {
			t.Fatal(err)
		}
	}
	if s.keys[0] == s.keys[1] {
		t.Errorf("two logical calls shared the key %q", s.keys[0])
	}
	s = &script{}
	if err := c.unary(WithIdempotencyKey(context.Background(), "order-42"), add, nil, nil, nil, s.invoke); err != nil || s.keys[0] != "order-42" {
		t.Errorf("the caller's key: %v %q", err, s.keys)
	}
}

// BenchmarkInterceptor is the client's own work per call, without the
// network: the contract lookup, the headers, the deadline and the retry
// loop around an invoker that answers at once.
func BenchmarkInterceptor(b *testing.B) {
	c, err := New("passthrough:///unused", WithInsecure())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	noop := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	for _, m := range []struct{ name, method string }{
		{"query", memoryv1.MemoryService_SearchMemories_FullMethodName},
		{"mutation", memoryv1.MemoryService_AddMemory_FullMethodName},
	} {
		b.Run(m.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := c.unary(ctx, m.method, nil, nil, nil, noop); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDefaultDeadline: an attempt without the caller's deadline gets its
// tool's class deadline; a caller's deadline is left alone.
func TestDefaultDeadline(t *testing.T) {
	c, err := New("passthrough:///unused", WithInsecure(), WithDeadlines(Deadlines{Fast: 3 * time.Second, Medium: 7 * time.Second, Slow: 50 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got time.Duration
	record := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		got = -1
		if dl, ok := ctx.Deadline(); ok {
			got = time.Until(dl)
		}
		return nil
	}
	method := memoryv1.MemoryService_SummarizeMemories_FullMethodName
	info, _ := toolOfMethod(method)
	if info.class != "medium" {
		t.Fatalf("summarize-memories' class read as %q, want medium", info.class)
	}
	want := 7 * time.Second
	if err := c.unary(context.Background(), method, nil, nil, nil, record); err != nil {
		t.Fatal(err)
	}
	if got <= want-time.Second || got > want {
		t.Errorf("summarize-memories (%s): attempt deadline in %s, want about %s", info.class, got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 42*time.Second)
	defer cancel()
	if err := c.unary(ctx, method, nil, nil, nil, record); err != nil {
		t.Fatal(err)
	}
	if got <= 41*time.Second {
		t.Errorf("the caller's 42 s deadline became %s", got)
	}
}
