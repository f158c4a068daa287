package interceptors_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

func runObserve(t *testing.T, c *interceptors.Call, during func(*prometheus.Registry), answer error) (*prometheus.Registry, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := prometheus.NewRegistry()
	next := &fakeNext{resp: func(context.Context, any) (any, error) {
		during(reg)
		return nil, answer
	}}
	if c.Facts.TraceID == "" {
		c.Facts.TraceID, c.Facts.CorrelationID = "trace-1", "corr-1"
	}
	_, err := runStep(context.Background(), interceptors.ObserveStep(logger, interceptors.NewMetrics(reg)), c, nil, next)
	if !errors.Is(err, answer) {
		t.Fatalf("err %v, want the handler's %v unchanged", err, answer)
	}
	return reg, logs
}

func TestObserveCountsByToolTransportAndCode(t *testing.T) {
	tool := memTool(t, searchMethod, nil)
	c := &interceptors.Call{Tool: tool, Facts: callctx.Facts{Transport: callctx.TransportREST}, Principal: fullPrincipal()}
	var inFlight float64
	reg, logs := runObserve(t, c, func(reg *prometheus.Registry) {
		inFlight = counter(t, reg, "toolsvc_calls_in_flight", nil)
	}, nil)
	if inFlight != 1 {
		t.Errorf("in flight during the call %v, want 1", inFlight)
	}
	if got := counter(t, reg, "toolsvc_calls_in_flight", nil); got != 0 {
		t.Errorf("in flight after the call %v, want 0", got)
	}
	if got := counter(t, reg, "toolsvc_calls_total", map[string]string{"tool": tool.Name, "transport": "rest", "code": "OK"}); got != 1 {
		t.Errorf("toolsvc_calls_total{%s,rest,OK} = %v, want 1", tool.Name, got)
	}
	line := finished(t, logs)
	for _, want := range []string{"level=INFO", "tool=" + tool.Name, "transport=rest", "trace_id=trace-1", "correlation_id=corr-1", "code=OK", "principal=alice", "tenant=acme"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %q", line, want)
		}
	}
}

func TestObserveLevelAndCodeOfFailures(t *testing.T) {
	tool := memTool(t, searchMethod, nil)
	for _, tc := range []struct {
		err   error
		code  string
		level string
	}{
		{toolerr.New(toolerr.NotFound, "gone"), "NOT_FOUND", "level=WARN"},
		{toolerr.New(toolerr.Internal, "boom"), "INTERNAL", "level=ERROR"},
		{toolerr.New(toolerr.ProviderError, "upstream"), "PROVIDER_ERROR", "level=ERROR"},
		{context.DeadlineExceeded, "TIMEOUT", "level=WARN"},
	} {
		c := &interceptors.Call{Tool: tool, Facts: callctx.Facts{Transport: callctx.TransportGRPC}}
		reg, logs := runObserve(t, c, func(*prometheus.Registry) {}, tc.err)
		if got := counter(t, reg, "toolsvc_calls_total", map[string]string{"tool": tool.Name, "transport": "grpc", "code": tc.code}); got != 1 {
			t.Errorf("%v: toolsvc_calls_total{code=%s} = %v, want 1", tc.err, tc.code, got)
		}
		if line := finished(t, logs); !strings.Contains(line, tc.level) || !strings.Contains(line, "code="+tc.code) {
			t.Errorf("%v: log line %q, want %s code=%s", tc.err, line, tc.level, tc.code)
		}
	}
}

func TestObserveNamesNonToolsByMethod(t *testing.T) {
	c := &interceptors.Call{FullMethod: "/toolsvc.v1.ToolService/ListTools", Facts: callctx.Facts{Transport: callctx.TransportMCP}}
	reg, _ := runObserve(t, c, func(*prometheus.Registry) {}, nil)
	if got := counter(t, reg, "toolsvc_calls_total", map[string]string{"tool": c.FullMethod, "transport": "mcp"}); got != 1 {
		t.Errorf("toolsvc_calls_total{tool=%s} = %v, want 1", c.FullMethod, got)
	}
}

func finished(t *testing.T, logs *logBuffer) string {
	t.Helper()
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="call finished"`) {
			return l
		}
	}
	t.Fatalf("no call finished line in %q", logs.String())
	return ""
}
