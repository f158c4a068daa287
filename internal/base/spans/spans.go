// Package spans starts the spans of a call's steps (a store's statements,
// a search's index lookup, an embedding) as children of the span in the
// context: the chain's span of the tool call when tracing is on
// (--otlp-endpoint). The child is made by the tracer provider of that
// span, so a tool or a store needs no tracer of its own and a step is
// traced exactly when its call is.
//
// Without a recording span in the context (tracing off, the default, or a
// trace not sampled) Start returns the context unchanged and a span that
// records nothing: a check, no allocation.
package spans

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of the steps' spans, the chain's.
const scope = "github.com/toolsvc/toolsvc"

// none is a span that records nothing (the one of an empty context).
var none = trace.SpanFromContext(context.Background())

// Start starts the span of a step named name, a child of ctx's span, and
// returns a context holding it. The caller ends it.
func Start(ctx context.Context, name string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, none
	}
	return parent.TracerProvider().Tracer(scope).Start(ctx, name)
}

// Fail marks span failed with a short description of what failed (never
// the error's text, which may hold a statement or a path: the log keeps
// that, under the call's trace id).
func Fail(span trace.Span, what string) {
	span.SetStatus(codes.Error, what)
}
