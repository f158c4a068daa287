package traceparent_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolsvc/toolsvc/internal/base/traceparent"
)

// BenchmarkTraceID reads a trace id as the chain does on every call, beside
// the same read through OpenTelemetry's TraceContext propagator
// (docs/BENCHMARKS.md, "Traceparent").
func BenchmarkTraceID(b *testing.B) {
	b.Run("traceparent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := traceparent.TraceID(valid); !ok {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("otel-propagator", func(b *testing.B) {
		b.ReportAllocs()
		var p propagation.TraceContext
		for b.Loop() {
			sc := trace.SpanContextFromContext(p.Extract(context.Background(), propagation.MapCarrier{"traceparent": valid}))
			if !sc.HasTraceID() || sc.TraceID().String() == "" {
				b.Fatal("invalid")
			}
		}
	})
}
