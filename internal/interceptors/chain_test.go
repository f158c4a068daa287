package interceptors_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/rpc/inproc"
	"github.com/toolsvc/toolsvc/internal/rpc/toolservice"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/auditlog"
	"github.com/toolsvc/toolsvc/internal/store/cache"
	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
)

// fakeMemory is a scripted MemoryService: each method does what the test
// sets, so every step of the chain can be exercised in isolation.
type fakeMemory struct {
	memoryv1.UnimplementedMemoryServiceServer
	search func(context.Context, *memoryv1.SearchMemoriesRequest) (*memoryv1.SearchMemoriesResponse, error)
	add    func(context.Context, *memoryv1.AddMemoryRequest) (*memoryv1.AddMemoryResponse, error)
	calls  atomic.Int32
}

func (f *fakeMemory) SearchMemories(ctx context.Context, r *memoryv1.SearchMemoriesRequest) (*memoryv1.SearchMemoriesResponse, error) {
	f.calls.Add(1)
	return f.search(ctx, r)
}

func (f *fakeMemory) AddMemory(ctx context.Context, r *memoryv1.AddMemoryRequest) (*memoryv1.AddMemoryResponse, error) {
	f.calls.Add(1)
	return f.add(ctx, r)
}

func okHints() *toolsvcv1.AgentHints {
	return hints.New().Evidence(hints.Evidence{Name: "test", Value: 0.8, Weight: 1}).Quality(hints.QualityHigh).Build("test")
}

func goodSearch(context.Context, *memoryv1.SearchMemoriesRequest) (*memoryv1.SearchMemoriesResponse, error) {
	return &memoryv1.SearchMemoriesResponse{Data: &memoryv1.SearchMemoriesData{Success: true}, AgentHints: okHints()}, nil
}

func goodAdd(context.Context, *memoryv1.AddMemoryRequest) (*memoryv1.AddMemoryResponse, error) {
	return &memoryv1.AddMemoryResponse{Data: &memoryv1.AddMemoryData{Success: true, MemoryId: store.NewMemoryID()}, AgentHints: okHints()}, nil
}

type harness struct {
	mem     *fakeMemory
	ch      *inproc.Channel
	audit   store.Store
	auditor *auditlog.Writer
}

type principal struct {
	perms    []string
	readOnly bool
}

// newHarness builds the real chain over the fake service, with API keys
// "full", "ro" (read-only) and "none" (no permissions).
func newHarness(t *testing.T, mutate func(*interceptors.Config)) *harness {
	t.Helper()
	mem := &fakeMemory{search: goodSearch, add: goodAdd}
	reg, err := registry.New([]registry.Service{{Desc: &memoryv1.MemoryService_ServiceDesc, Impl: mem}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &auth.Config{}
	for key, p := range map[string]principal{"full": {perms: []string{"*"}}, "ro": {perms: []string{"memory:*"}, readOnly: true}, "none": {perms: []string{"knowledge:read"}}} {
		cfg.APIKeys = append(cfg.APIKeys, auth.APIKeyConfig{KeySHA256: auth.HashKey(key), Subject: key, Tenant: "acme", Permissions: p.perms, ReadOnly: p.readOnly,
			Identifiers: map[string]string{"user_id": "u1"}})
	}
	a, err := auth.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	v, err := protovalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := interceptors.NewMetrics(nil)
	auditor := runAuditor(t, st, logger)
	c := cache.NewMemory(1 << 20)
	ic := interceptors.Config{
		Registry: reg, Auth: a, Limiter: ratelimit.NewMemory(), Cache: c, Group: cache.NewGroup(c), Auditor: auditor,
		Validator: v, Metrics: m, Logger: logger, ServiceVersion: "9.9.9",
	}
	if mutate != nil {
		mutate(&ic)
	}
	chain, err := interceptors.Chain(ic)
	if err != nil {
		t.Fatal(err)
	}
	ch := inproc.New(chain)
	memoryv1.RegisterMemoryServiceServer(ch, mem)
	toolsvcv1.RegisterToolServiceServer(ch, toolservice.New(reg))
	return &harness{mem: mem, ch: ch, audit: st, auditor: auditor}
}

func as(key string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
}

func toolError(t *testing.T, err error) (*status.Status, *toolsvcv1.ToolError) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || err == nil {
		t.Fatalf("want a status error, got %v", err)
	}
	return st, toolerr.FromStatus(st)
}

func TestAuthenticationAndPolicy(t *testing.T) {
	h := newHarness(t, nil)
	client := memoryv1.NewMemoryServiceClient(h.ch)
	tests := []struct {
		name string
		ctx  context.Context
		call func(context.Context) error
		want codes.Code
		code string
	}{
		{"no token", context.Background(), func(ctx context.Context) error {
			_, err := client.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "x"})
			return err
		}, codes.Unauthenticated, "UNAUTHORIZED"},
		{"bad token", as("nope"), func(ctx context.Context) error {
			_, err := client.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "x"})
			return err
		}, codes.Unauthenticated, "UNAUTHORIZED"},
		{"no permission looks like no tool", as("none"), func(ctx context.Context) error {
			_, err := client.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "x"})
			return err
		}, codes.NotFound, "NOT_FOUND"},
		{"read-only on a mutation", as("ro"), func(ctx context.Context) error {
			_, err := client.AddMemory(ctx, &memoryv1.AddMemoryRequest{Content: "x"})
			return err
		}, codes.PermissionDenied, "FORBIDDEN"},
		{"read-only on a query", as("ro"), func(ctx context.Context) error {
			_, err := client.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "x"})
			return err
		}, codes.OK, ""},
		{"x-user-id without act_for_users", metadata.AppendToOutgoingContext(as("full"), "x-user-id", "mallory"), func(ctx context.Context) error {
			_, err := client.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "x"})
			return err
		}, codes.PermissionDenied, "FORBIDDEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.mem.calls.Load()
			err := tt.call(tt.ctx)
			if tt.want == codes.OK {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			st, te := toolError(t, err)
			if st.Code() != tt.want || te.GetCode() != tt.code {
				t.Fatalf("status %v / %s, want %v / %s", st.Code(), te.GetCode(), tt.want, tt.code)
			}
			if h.mem.calls.Load() != before {
				t.Fatal("the handler ran although the call was refused")
			}
		})
	}
}

func TestGenericCallChecksAuthBeforeAnythingElse(t *testing.T) {
	h := newHarness(t, nil)
	tools := toolsvcv1.NewToolServiceClient(h.ch)
	args, _ := structpb.NewStruct(map[string]any{"nope": 1})
	for _, name := range []string{"search-memories", "no-such-tool"} {
		_, err := tools.CallTool(context.Background(), &toolsvcv1.CallToolRequest{Name: name, Arguments: args})
		if _, te := toolError(t, err); te.GetCode() != "UNAUTHORIZED" {
			t.Fatalf("%s without a token: %s, want UNAUTHORIZED", name, te.GetCode())
		}
	}
	_, err := tools.CallTool(as("full"), &toolsvcv1.CallToolRequest{Name: "search-memories", Arguments: args})
	if _, te := toolError(t, err); te.GetCode() != "INVALID_INPUT" || !strings.Contains(te.GetMessage(), "nope") {
		t.Fatalf("unknown argument: %v, want INVALID_INPUT naming the field", te)
	}
}

func TestValidationNamesJSONFieldPaths(t *testing.T) {
	h := newHarness(t, nil)
	client := memoryv1.NewMemoryServiceClient(h.ch)
	limit := uint32(500)
	_, err := client.SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "", Limit: &limit, Layers: []string{"user", "galaxy"}})
	st, te := toolError(t, err)
	if st.Code() != codes.InvalidArgument || te.GetKind() != "validation" || te.GetRetryable() {
		t.Fatalf("got %v %v", st.Code(), te)
	}
	fields := map[string]string{}
	for _, v := range te.GetFieldViolations() {
		fields[v.GetField()] = v.GetRule()
	}
	for _, want := range []string{"query", "limit", "layers[1]"} {
		if fields[want] == "" {
			t.Errorf("no violation for %s in %v", want, fields)
		}
	}
	if h.mem.calls.Load() != 0 {
		t.Fatal("handler ran on invalid input")
	}
}

func TestBrokenResultNeverReachesTheCaller(t *testing.T) {
	h := newHarness(t, nil)
	client := memoryv1.NewMemoryServiceClient(h.ch)
	tests := []struct {
		name string
		resp *memoryv1.SearchMemoriesResponse
	}{
		{"no data", &memoryv1.SearchMemoriesResponse{AgentHints: okHints()}},
		{"no hints", &memoryv1.SearchMemoriesResponse{Data: &memoryv1.SearchMemoriesData{}}},
		{"confidence out of range", &memoryv1.SearchMemoriesResponse{Data: &memoryv1.SearchMemoriesData{}, AgentHints: func() *toolsvcv1.AgentHints { h := okHints(); h.Confidence = 1.5; return h }()}},
		{"missing validity period", &memoryv1.SearchMemoriesResponse{Data: &memoryv1.SearchMemoriesData{}, AgentHints: func() *toolsvcv1.AgentHints { h := okHints(); h.ValidityPeriod = ""; return h }()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.mem.search = func(context.Context, *memoryv1.SearchMemoriesRequest) (*memoryv1.SearchMemoriesResponse, error) {
				return tt.resp, nil
			}
			_, err := client.SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "q " + tt.name})
			if st, _ := toolError(t, err); st.Code() != codes.Internal || strings.Contains(st.Message(), "confidence") {
				t.Fatalf("got %v %q, want a bare INTERNAL", st.Code(), st.Message())
			}
		})
	}
}

func TestMetadataFilledInOnePlace(t *testing.T) {
	h := newHarness(t, nil)
	ctx := metadata.AppendToOutgoingContext(as("full"), "x-correlation-id", "corr-1", "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := memoryv1.NewMemoryServiceClient(h.ch).AddMemory(ctx, &memoryv1.AddMemoryRequest{Content: "x"})
	if err != nil {
		t.Fatal(err)
	}
	md := resp.GetMetadata()
	if md.GetTool() != "add-memory" || md.GetToolVersion() != "1.0.0" || md.GetServiceVersion() != "9.9.9" ||
		md.GetCorrelationId() != "corr-1" || md.GetTraceId() != "4bf92f3577b34da6a3ce929d0e0e4736" || md.GetTimestamp() == nil || md.GetCached() {
		t.Fatalf("metadata = %v", md)
	}
}

func TestPanicBecomesInternalAndIsNotShown(t *testing.T) {
	h := newHarness(t, nil)
	h.mem.search = func(context.Context, *memoryv1.SearchMemoriesRequest) (*memoryv1.SearchMemoriesResponse, error) {
		panic("secret database password in a panic")
	}
	_, err := memoryv1.NewMemoryServiceClient(h.ch).SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "x"})
	st, te := toolError(t, err)
	if st.Code() != codes.Internal || strings.Contains(err.Error(), "secret") || te.GetTraceId() == "" {
		t.Fatalf("got %v", err)
	}
}

func TestDeadlineCancelsWorkAndReportsTimeout(t *testing.T) {
	h := newHarness(t, func(c *interceptors.Config) {
		c.Deadlines = interceptors.Deadlines{Fast: 20 * time.Millisecond, Medium: time.Second, Slow: time.Second}
	})
	cancelled := make(chan struct{})
	h.mem.search = func(ctx context.Context, _ *memoryv1.SearchMemoriesRequest) (*memoryv1.SearchMemoriesResponse, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}
	_, err := memoryv1.NewMemoryServiceClient(h.ch).SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "x"})
	if _, te := toolError(t, err); te.GetCode() != "TIMEOUT" || !te.GetRetryable() {
		t.Fatalf("got %v", te)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}
}

func TestRateLimitCarriesRetryAfter(t *testing.T) {
	h := newHarness(t, func(c *interceptors.Config) { c.Ceiling = ratelimit.Limit{Max: 2, Window: time.Minute} })
	client := memoryv1.NewMemoryServiceClient(h.ch)
	for i := range 2 {
		if _, err := client.SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "x" + string(rune('a'+i))}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err := client.SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "x"})
	st, te := toolError(t, err)
	if st.Code() != codes.ResourceExhausted || te.GetCode() != "RATE_LIMITED" || te.GetRetryAfterSeconds() <= 0 {
		t.Fatalf("got %v %v", st.Code(), te)
	}
	var ri *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			ri = r
		}
	}
	if ri == nil || ri.GetRetryDelay().AsDuration() <= 0 {
		t.Fatal("no RetryInfo in the status")
	}
}

func TestCacheServesRepeatsAndMutationsInvalidate(t *testing.T) {
	h := newHarness(t, nil)
	client := memoryv1.NewMemoryServiceClient(h.ch)
	req := &memoryv1.SearchMemoriesRequest{Query: "cached query"}
	first, err := client.SearchMemories(as("full"), req)
	if err != nil {
		t.Fatal(err)
	}
	second, err := client.SearchMemories(as("full"), req)
	if err != nil {
		t.Fatal(err)
	}
	if first.GetMetadata().GetCached() || !second.GetMetadata().GetCached() || h.mem.calls.Load() != 1 {
		t.Fatalf("cached flags %v/%v, handler calls %d", first.GetMetadata().GetCached(), second.GetMetadata().GetCached(), h.mem.calls.Load())
	}
	if _, err := client.AddMemory(as("full"), &memoryv1.AddMemoryRequest{Content: "new"}); err != nil {
		t.Fatal(err)
	}
	third, err := client.SearchMemories(as("full"), req)
	if err != nil {
		t.Fatal(err)
	}
	if third.GetMetadata().GetCached() {
		t.Fatal("a mutation of the memory domain did not invalidate the cached query")
	}
	// Another principal (different visible scope) never shares the entry.
	if r, err := client.SearchMemories(as("ro"), req); err != nil || r.GetMetadata().GetCached() {
		t.Fatalf("other principal: cached=%v err=%v", r.GetMetadata().GetCached(), err)
	}
}

func TestAuditRecordsAllowsAndDenies(t *testing.T) {
	h := newHarness(t, nil)
	client := memoryv1.NewMemoryServiceClient(h.ch)
	_, _ = client.SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "x"})
	_, _ = client.AddMemory(as("ro"), &memoryv1.AddMemoryRequest{Content: "x"})
	h.auditor.Close()
	events, _, err := h.audit.ListAudit(context.Background(), store.AuditFilter{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range events {
		got[e.Tool+"/"+e.Subject] = e.Decision + "/" + e.Code
	}
	if got["search-memories/full"] != "allow/OK" || got["add-memory/ro"] != "deny/FORBIDDEN" {
		t.Fatalf("audit = %v", got)
	}
}

func TestAuditFailureNeverFailsTheCall(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.audit.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := memoryv1.NewMemoryServiceClient(h.ch).SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "x"}); err != nil {
		t.Fatalf("call failed because audit could not be written: %v", err)
	}
	h.auditor.Close()
}

func TestLimitsBeforeValidation(t *testing.T) {
	h := newHarness(t, nil)
	client := memoryv1.NewMemoryServiceClient(h.ch)
	deep := map[string]any{"leaf": "x"}
	for range interceptors.DefaultMaxJSONDepth + 5 {
		deep = map[string]any{"n": deep}
	}
	deepStruct, err := structpb.NewStruct(deep)
	if err != nil {
		t.Fatal(err)
	}
	many := make([]string, 100000)
	for i := range many {
		many[i] = "t"
	}
	tests := []struct {
		name        string
		req         *memoryv1.AddMemoryRequest
		field, rule string
	}{
		{"NUL in content", &memoryv1.AddMemoryRequest{Content: "a\x00b"}, "content", "string.no_nul"},
		{"NUL in a tag", &memoryv1.AddMemoryRequest{Content: "a", Tags: []string{"ok", "b\x00"}}, "tags[1]", "string.no_nul"},
		{"NUL inside metadata", &memoryv1.AddMemoryRequest{Content: "a", Metadata: func() *structpb.Struct { s, _ := structpb.NewStruct(map[string]any{"k": "v\x00"}); return s }()}, "metadata", "string.no_nul"},
		{"metadata too deep", &memoryv1.AddMemoryRequest{Content: "a", Metadata: deepStruct}, "metadata", "json.max_depth"},
		{"far too many tags", &memoryv1.AddMemoryRequest{Content: "a", Tags: many}, "tags", "repeated.max_items"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.AddMemory(as("full"), tt.req)
			_, te := toolError(t, err)
			if te.GetCode() != "INVALID_INPUT" || len(te.GetFieldViolations()) != 1 {
				t.Fatalf("got %v", te)
			}
			fv := te.GetFieldViolations()[0]
			if !strings.HasPrefix(fv.GetField(), tt.field) || fv.GetRule() != tt.rule {
				t.Fatalf("violation %v, want field %s rule %s", fv, tt.field, tt.rule)
			}
		})
	}
	if h.mem.calls.Load() != 0 {
		t.Fatal("a handler ran on input that breaks the limits")
	}
}

// TestMaxJSONDepthIsConfigurable: Config.MaxJSONDepth (--max-json-depth)
// moves the nesting limit of free-form JSON arguments both ways.
func TestMaxJSONDepthIsConfigurable(t *testing.T) {
	nested := func(levels int) *structpb.Struct {
		v := map[string]any{"leaf": "x"}
		for range levels {
			v = map[string]any{"n": v}
		}
		s, err := structpb.NewStruct(v)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	h := newHarness(t, func(c *interceptors.Config) { c.MaxJSONDepth = 4 })
	client := memoryv1.NewMemoryServiceClient(h.ch)
	if _, err := client.AddMemory(as("full"), &memoryv1.AddMemoryRequest{Content: "a", Metadata: nested(2)}); err != nil {
		t.Fatalf("3 levels under a limit of 4: %v", err)
	}
	_, err := client.AddMemory(as("full"), &memoryv1.AddMemoryRequest{Content: "a", Metadata: nested(8)})
	if _, te := toolError(t, err); te.GetCode() != "INVALID_INPUT" || te.GetFieldViolations()[0].GetRule() != "json.max_depth" {
		t.Fatalf("9 levels under a limit of 4: %v", te)
	}
}
