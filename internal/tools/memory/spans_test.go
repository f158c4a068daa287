package memory_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
)

// TestSearchSpans checks that a traced search has a span for each of its
// steps, each a child of the call's span (or of the step it is part of),
// with what the step found; that a lexical search has no nearest-vector
// steps; and that a failing embedder marks its steps failed, without the
// error's text, while the search goes on by full text.
func TestSearchSpans(t *testing.T) {
	for _, b := range benchBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			emb := &flakyEmbedder{conceptEmbedder: newConceptEmbedder("concepts-v1", issueGroups), failFrom: 1 << 62}
			s := memory.New(st, memory.WithEmbedder(emb))
			ctx := caller(t, "t1", map[string]string{"user_id": "u1"})
			for _, c := range []string{"The billing service stores invoices in PostgreSQL", "Deploys happen every Tuesday after the standup",
				"User prefers functional programming patterns over OOP", "The billing team reviews invoices monthly"} {
				add(t, ctx, s, c, "user")
			}
			req := &memoryv1.SearchMemoriesRequest{Query: "billing invoices", Threshold: ptr(0.0)}

			// The steps of a lexical search: PostgreSQL's two statements
			// under the full-text step.
			lexical := map[string]string{"memory.full_text": "search-memories", "memory.rank": "search-memories", "memory.page": "search-memories"}
			if b.name == "postgres" {
				lexical["postgres.window"] = "memory.full_text"
				lexical["postgres.candidates"] = "memory.full_text"
			}
			hybrid := map[string]string{"memory.nearest": "search-memories", "memory.embed_query": "memory.nearest",
				"memory.vector_index": "memory.nearest", "memory.nearest_rows": "memory.nearest"}
			maps.Copy(hybrid, lexical)

			spans, resp := tracedSearch(t, ctx, s, req)
			checkParents(t, spans, hybrid)
			if got, want := intAttr(t, spans["memory.rank"], "toolsvc.memory.hits"), int64(resp.GetData().GetTotalCount()); got != want {
				t.Errorf("memory.rank hits = %d, want the response's total count %d", got, want)
			}
			if got := intAttr(t, spans["memory.full_text"], "toolsvc.memory.candidates"); got != 2 {
				t.Errorf("memory.full_text candidates = %d, want the 2 memories holding a search word", got)
			}
			if got := intAttr(t, spans["memory.nearest"], "toolsvc.memory.nearest"); got != 4 {
				t.Errorf("memory.nearest = %d vectors, want all 4 of the scope", got)
			}
			if got := intAttr(t, spans["memory.page"], "toolsvc.memory.rows_read"); got < 1 || got > int64(len(resp.GetData().GetResults())) {
				t.Errorf("memory.page read %d rows for %d results", got, len(resp.GetData().GetResults()))
			}

			// A lexical search has no nearest-vector steps.
			spans, _ = tracedSearch(t, ctx, memory.New(st), req)
			checkParents(t, spans, lexical)

			// A failing embedder fails its steps, not the call.
			emb.failFrom = 0
			spans, resp = tracedSearch(t, ctx, s, req)
			for _, name := range []string{"memory.embed_query", "memory.nearest"} {
				sp := spans[name]
				if sp == nil || sp.Status().Code != codes.Error || strings.Contains(sp.Status().Description, errDown.Error()) {
					t.Errorf("%s after the embedder failed: %+v", name, sp)
				}
			}
			if len(resp.GetData().GetResults()) != 2 {
				t.Errorf("lexical fallback found %d results, want 2", len(resp.GetData().GetResults()))
			}
		})
	}
}

// tracedSearch runs req under a recorded span named as the chain names the
// call's, and returns the spans that ended by name.
func tracedSearch(t *testing.T, ctx context.Context, s *memory.Service, req *memoryv1.SearchMemoriesRequest) (map[string]sdktrace.ReadOnlySpan, *memoryv1.SearchMemoriesResponse) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, call := tp.Tracer("test").Start(ctx, "search-memories")
	resp, err := s.SearchMemories(ctx, req)
	call.End()
	if err != nil {
		t.Fatal(err)
	}
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		if spans[sp.Name()] != nil {
			t.Errorf("two spans named %s", sp.Name())
		}
		spans[sp.Name()] = sp
	}
	return spans, resp
}

// checkParents checks that each named span exists, in the call's trace,
// with the named parent.
func checkParents(t *testing.T, spans map[string]sdktrace.ReadOnlySpan, parents map[string]string) {
	t.Helper()
	call := spans["search-memories"]
	for name, parent := range parents {
		sp, p := spans[name], spans[parent]
		switch {
		case sp == nil || p == nil:
			t.Errorf("span %s or its parent %s missing", name, parent)
		case sp.SpanContext().TraceID() != call.SpanContext().TraceID():
			t.Errorf("span %s is in trace %s, not the call's", name, sp.SpanContext().TraceID())
		case sp.Parent().SpanID() != p.SpanContext().SpanID():
			t.Errorf("span %s has parent %s, want %s", name, sp.Parent().SpanID(), parent)
		case sp.SpanKind() != trace.SpanKindInternal:
			t.Errorf("span %s is of kind %s", name, sp.SpanKind())
		}
	}
	if len(spans) != len(parents)+1 {
		names := make([]string, 0, len(spans))
		for n := range spans {
			names = append(names, n)
		}
		t.Errorf("spans %v, want the call's and %d steps", names, len(parents))
	}
}

// intAttr returns the integer attribute key of span sp.
func intAttr(t *testing.T, sp sdktrace.ReadOnlySpan, key attribute.Key) int64 {
	t.Helper()
	if sp == nil {
		t.Fatalf("no span for attribute %s", key)
	}
	for _, kv := range sp.Attributes() {
		if kv.Key == key {
			return kv.Value.AsInt64()
		}
	}
	t.Fatalf("span %s has no attribute %s", sp.Name(), key)
	return 0
}
