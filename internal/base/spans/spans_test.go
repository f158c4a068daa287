package spans_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolsvc/toolsvc/internal/base/spans"
)

func TestStart(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	sampled := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	unsampled := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.NeverSample()))

	// A traced call: the step is its child, in its trace, by its provider.
	ctx, call := sampled.Tracer("chain").Start(context.Background(), "call")
	sctx, step := spans.Start(ctx, "step")
	if !step.IsRecording() || sctx == ctx {
		t.Fatal("a traced call's step is not recorded")
	}
	spans.Fail(step, "store")
	step.End()
	call.End()
	ended := rec.Ended()
	if len(ended) != 2 || ended[0].Name() != "step" || ended[0].Parent().SpanID() != call.SpanContext().SpanID() ||
		ended[0].SpanContext().TraceID() != call.SpanContext().TraceID() {
		t.Fatalf("spans %v: want the step, a child of the call", ended)
	}
	if st := ended[0].Status(); st.Code != codes.Error || st.Description != "store" {
		t.Errorf("failed step's status %+v", st)
	}

	// No span, or one not sampled: nothing recorded, the context unchanged,
	// nothing allocated.
	notSampled, _ := unsampled.Tracer("chain").Start(context.Background(), "call")
	for name, ctx := range map[string]context.Context{"no span": context.Background(), "not sampled": notSampled} {
		allocs := testing.AllocsPerRun(100, func() {
			sctx, step := spans.Start(ctx, "step")
			if step.IsRecording() || sctx != ctx {
				t.Errorf("%s: a step was recorded", name)
			}
			step.End()
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations a step, want 0", name, allocs)
		}
	}
	if n := len(rec.Ended()); n != 2 {
		t.Errorf("%d spans recorded, want the traced call's 2", n)
	}
}
