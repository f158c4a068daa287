package interceptors_test

import (
	"context"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// boundaryCall runs boundary, then recovery with the chain's handler, then
// inner in place of the steps.
func boundaryCall(t *testing.T, inner grpc.UnaryHandler) (any, *prometheus.Registry, *logBuffer, error) {
	t.Helper()
	logger, logs := bufLogger()
	reg := prometheus.NewRegistry()
	rec := recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(interceptors.RecoverPanic(logger, interceptors.NewMetrics(reg))))
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(wire.HeaderTraceparent, traceparent))
	info := &grpc.UnaryServerInfo{FullMethod: searchMethod}
	resp, err := interceptors.BoundaryStep("1.2.3")(ctx, nil, info, func(ctx context.Context, req any) (any, error) {
		return rec(ctx, req, info, inner)
	})
	return resp, reg, logs, err
}

func TestBoundaryMapsErrorsToStatusWithToolError(t *testing.T) {
	tool := memTool(t, searchMethod, nil)
	_, _, _, err := boundaryCall(t, func(ctx context.Context, _ any) (any, error) {
		c := interceptors.CallFrom(ctx)
		if c == nil || c.Facts.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Fatalf("call %v: want one started from the caller's traceparent", c)
		}
		c.Tool = tool
		e := toolerr.New(toolerr.RateLimited, "slow down")
		return nil, e
	})
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		t.Fatalf("err %v, want RESOURCE_EXHAUSTED status", err)
	}
	te := toolerr.FromStatus(st)
	if te.GetCode() != string(toolerr.RateLimited) || !te.GetRetryable() {
		t.Errorf("ToolError %v, want retryable RATE_LIMITED", te)
	}
	if !strings.Contains(st.Message(), "slow down") {
		t.Errorf("message %q lost the error's", st.Message())
	}
}

func TestBoundaryPassesSuccess(t *testing.T) {
	want := "ok"
	resp, _, _, err := boundaryCall(t, func(context.Context, any) (any, error) { return want, nil })
	if err != nil || resp != want {
		t.Fatalf("resp %v err %v", resp, err)
	}
}

func TestPanicIsInternalCountedAndLoggedNotShown(t *testing.T) {
	const secret = "db password is hunter2"
	_, reg, logs, err := boundaryCall(t, func(context.Context, any) (any, error) { panic(secret) })
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Internal {
		t.Fatalf("err %v, want INTERNAL", err)
	}
	if te := toolerr.FromStatus(st); te.GetCode() != string(toolerr.Internal) {
		t.Errorf("ToolError code %q, want INTERNAL", te.GetCode())
	}
	for _, shown := range []string{st.Message(), st.String()} {
		if strings.Contains(shown, "hunter2") || strings.Contains(shown, "goroutine") {
			t.Errorf("the caller sees the panic's internals: %q", shown)
		}
	}
	for _, d := range st.Details() {
		if strings.Contains(toString(d), "hunter2") {
			t.Errorf("a status detail carries the panic: %v", d)
		}
	}
	if got := counter(t, reg, "toolsvc_panics_total", nil); got != 1 {
		t.Errorf("toolsvc_panics_total = %v, want 1", got)
	}
	if !logs.contains("panic in call") || !logs.contains("hunter2") || !logs.contains("4bf92f3577b34da6a3ce929d0e0e4736") || !logs.contains("stack=") {
		t.Errorf("log %q: want the panic, its stack and the trace id", logs.String())
	}
}

func toString(v any) string {
	if s, ok := v.(interface{ String() string }); ok {
		return s.String()
	}
	return ""
}
