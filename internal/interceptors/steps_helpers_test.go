package interceptors_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/auditlog"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// Helpers of the per-step tests: each step is called alone, with a Call
// as the steps before it leave it and a fake handler in place of the rest.

const (
	searchMethod = "/toolsvc.memory.v1.MemoryService/SearchMemories"
	addMethod    = "/toolsvc.memory.v1.MemoryService/AddMemory"
)

func memRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	mem := &fakeMemory{search: goodSearch, add: goodAdd}
	reg, err := registry.New([]registry.Service{{Desc: &memoryv1.MemoryService_ServiceDesc, Impl: mem}})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// memTool is a copy of the memory tool of method, changed by edit.
func memTool(t *testing.T, method string, edit func(*registry.Tool)) *registry.Tool {
	t.Helper()
	tl, ok := memRegistry(t).ByMethod(method)
	if !ok {
		t.Fatalf("no tool for %s", method)
	}
	cp := *tl
	cp.Spec = proto.Clone(tl.Spec).(*toolsvcv1.Tool)
	if edit != nil {
		edit(&cp)
	}
	return &cp
}

func fullPrincipal() *auth.Principal {
	return &auth.Principal{Subject: "alice", Tenant: "acme", Permissions: []string{"*"}, Method: auth.MethodAPIKey}
}

// fakeNext is the rest of the chain: it records what reached it.
type fakeNext struct {
	mu    sync.Mutex
	calls int
	ctx   context.Context
	req   any
	resp  func(context.Context, any) (any, error)
}

func (f *fakeNext) handle(ctx context.Context, req any) (any, error) {
	f.mu.Lock()
	f.calls++
	f.ctx, f.req = ctx, req
	f.mu.Unlock()
	if f.resp == nil {
		return &memoryv1.SearchMemoriesResponse{Data: &memoryv1.SearchMemoriesData{Success: true}, AgentHints: okHints()}, nil
	}
	return f.resp(ctx, req)
}

func (f *fakeNext) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func runStep(ctx context.Context, step grpc.UnaryServerInterceptor, c *interceptors.Call, req any, next *fakeNext) (any, error) {
	return step(interceptors.WithCall(ctx, c), req, &grpc.UnaryServerInfo{FullMethod: c.FullMethod}, next.handle)
}

// wantCode fails unless err is a ToolError of code.
func wantCode(t *testing.T, err error, code toolerr.Code) *toolerr.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	e, ok := toolerr.As(err)
	if !ok {
		t.Fatalf("error %v (%T) is not a ToolError, want %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("code %s (%v), want %s", e.Code, err, code)
	}
	return e
}

// counter is the value of the series of name whose labels include want.
func counter(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue metrics
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// logBuffer is a logger whose lines a test can read.
type logBuffer struct{ testenv.Buffer }

func (l *logBuffer) contains(s string) bool { return strings.Contains(l.String(), s) }

func bufLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// runAuditor is an audit writer of st whose Run runs until the test ends,
// as the server runs it; the test's cleanup closes it.
func runAuditor(tb testing.TB, st store.AuditStore, logger *slog.Logger, opts ...auditlog.Option) *auditlog.Writer {
	tb.Helper()
	w := auditlog.New(st, logger, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	tb.Cleanup(func() { w.Close(); cancel(); <-done })
	return w
}
