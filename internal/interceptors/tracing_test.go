package interceptors_test

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

func TestSpansContinueTheCallersTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := newHarness(t, func(c *interceptors.Config) { c.Tracer = tp.Tracer("test") })
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx := metadata.AppendToOutgoingContext(as("full"), "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := memoryv1.NewMemoryServiceClient(h.ch).SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "traced"})
	if err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("spans = %d, want 1", len(spans))
	}
	sp := spans[0]
	if sp.Name() != "search-memories" || sp.SpanContext().TraceID().String() != traceID || sp.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("span %s trace %s parent %s", sp.Name(), sp.SpanContext().TraceID(), sp.Parent().SpanID())
	}
	if resp.GetMetadata().GetTraceId() != traceID {
		t.Fatalf("metadata trace id %s, want %s", resp.GetMetadata().GetTraceId(), traceID)
	}

	// Without a traceparent the span starts a trace, and metadata reports it.
	resp, err = memoryv1.NewMemoryServiceClient(h.ch).SearchMemories(as("full"), &memoryv1.SearchMemoriesRequest{Query: "untraced"})
	if err != nil {
		t.Fatal(err)
	}
	last := rec.Ended()[1]
	if got := resp.GetMetadata().GetTraceId(); got != last.SpanContext().TraceID().String() || got == traceID {
		t.Fatalf("metadata trace id %s, span trace id %s", got, last.SpanContext().TraceID())
	}
}
