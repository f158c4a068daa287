package interceptors_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"buf.build/go/protovalidate"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

func runResult(t *testing.T, c *interceptors.Call, resp func(context.Context, any) (any, error)) (any, *logBuffer, error) {
	t.Helper()
	v, err := protovalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	logger, logs := bufLogger()
	out, err := runStep(context.Background(), interceptors.ResultStep(v, "1.2.3", logger), c, nil, &fakeNext{resp: resp})
	return out, logs, err
}

func searchResponse(r *memoryv1.SearchMemoriesResponse) func(context.Context, any) (any, error) {
	return func(context.Context, any) (any, error) { return r, nil }
}

func resultCall(t *testing.T, edit func(*registry.Tool)) *interceptors.Call {
	return &interceptors.Call{
		Tool:           memTool(t, searchMethod, edit),
		Facts:          callctx.Facts{Start: time.Now().Add(-time.Millisecond), TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", CorrelationID: "corr-1"},
		IdempotencyKey: "key-1",
	}
}

func TestResultFillsMetadata(t *testing.T) {
	c := resultCall(t, nil)
	out, _, err := runResult(t, c, searchResponse(&memoryv1.SearchMemoriesResponse{Data: &memoryv1.SearchMemoriesData{Success: true}, AgentHints: okHints()}))
	if err != nil {
		t.Fatal(err)
	}
	md := out.(*memoryv1.SearchMemoriesResponse).GetMetadata()
	if md.GetTool() != c.Tool.Name || md.GetToolVersion() != c.Tool.Version || md.GetServiceVersion() != "1.2.3" {
		t.Errorf("metadata %v: want tool, version and service version", md)
	}
	if md.GetTraceId() != c.Facts.TraceID || md.GetCorrelationId() != "corr-1" || md.GetIdempotencyKey() != "key-1" {
		t.Errorf("metadata %v: want the call's trace, correlation and idempotency key", md)
	}
	if md.GetExecutionTimeMs() <= 0 || !md.GetTimestamp().AsTime().Equal(c.Facts.Start.UTC().Truncate(time.Nanosecond)) {
		t.Errorf("metadata %v: want execution time and the call's start", md)
	}
	if md.GetCached() || md.GetReplayed() {
		t.Errorf("fresh result marked cached %v replayed %v", md.GetCached(), md.GetReplayed())
	}
}

func TestResultContractViolationsAreInternal(t *testing.T) {
	badHints := okHints()
	badHints.Confidence = 1.5
	for name, tc := range map[string]struct {
		resp *memoryv1.SearchMemoriesResponse
		log  string
	}{
		"no data":         {&memoryv1.SearchMemoriesResponse{AgentHints: okHints()}, "data is null on success"},
		"no hints":        {&memoryv1.SearchMemoriesResponse{Data: &memoryv1.SearchMemoriesData{}}, "agent_hints missing"},
		"confidence 1.5":  {&memoryv1.SearchMemoriesResponse{Data: &memoryv1.SearchMemoriesData{}, AgentHints: badHints}, "confidence"},
		"no hint summary": {&memoryv1.SearchMemoriesResponse{Data: &memoryv1.SearchMemoriesData{}, AgentHints: &toolsvcv1.AgentHints{}}, "violation="},
	} {
		t.Run(name, func(t *testing.T) {
			c := resultCall(t, nil)
			out, logs, err := runResult(t, c, searchResponse(tc.resp))
			e := wantCode(t, err, toolerr.Internal)
			if out != nil {
				t.Errorf("a broken result reached the caller: %v", out)
			}
			if strings.Contains(e.Message, tc.log) || e.Message != "internal error: the tool produced an invalid result" {
				t.Errorf("message %q tells the caller the internals", e.Message)
			}
			if !logs.contains("tool result breaks the ToolResult contract") || !logs.contains(tc.log) || !logs.contains(c.Facts.TraceID) {
				t.Errorf("log %q: want the violation %q with the trace id", logs.String(), tc.log)
			}
		})
	}
}

func TestResultNotAMessageIsInternal(t *testing.T) {
	_, _, err := runResult(t, resultCall(t, nil), func(context.Context, any) (any, error) { return "not a proto", nil })
	wantCode(t, err, toolerr.Internal)
}

func TestResultPassesErrorsAndNonTools(t *testing.T) {
	refusal := toolerr.New(toolerr.Conflict, "exists")
	_, _, err := runResult(t, resultCall(t, nil), func(context.Context, any) (any, error) { return nil, refusal })
	if !errors.Is(err, refusal) {
		t.Fatalf("err %v, want the handler's", err)
	}
	// ToolService's answers have no ToolResult contract.
	list := &toolsvcv1.ListToolsResponse{}
	out, _, err := runResult(t, &interceptors.Call{}, func(context.Context, any) (any, error) { return list, nil })
	if err != nil || out != list {
		t.Fatalf("out %v err %v, want the answer untouched", out, err)
	}
}

func TestResultCachedAndReplayedGetFreshMetadata(t *testing.T) {
	for _, mark := range []string{"cached", "replayed"} {
		c := resultCall(t, nil)
		c.Cached, c.Replayed = mark == "cached", mark == "replayed"
		stale := &toolsvcv1.ResultMetadata{TraceId: "old", Cached: false}
		out, _, err := runResult(t, c, searchResponse(&memoryv1.SearchMemoriesResponse{Data: &memoryv1.SearchMemoriesData{}, AgentHints: okHints(), Metadata: stale}))
		if err != nil {
			t.Fatalf("%s: %v", mark, err)
		}
		md := out.(*memoryv1.SearchMemoriesResponse).GetMetadata()
		if md.GetTraceId() != c.Facts.TraceID || md.GetCached() != c.Cached || md.GetReplayed() != c.Replayed {
			t.Errorf("%s: metadata %v, want this call's with %s true", mark, md, mark)
		}
	}
}

func TestResultDeprecatedToolWarns(t *testing.T) {
	c := resultCall(t, func(tl *registry.Tool) {
		tl.Spec.Deprecated = &toolsvcv1.Deprecation{Since: "2029-01-01", RemovalDate: "2031-01-01", Replacement: "search-memories-v2"}
	})
	out, logs, err := runResult(t, c, searchResponse(&memoryv1.SearchMemoriesResponse{Data: &memoryv1.SearchMemoriesData{}, AgentHints: okHints()}))
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, w := range out.(*memoryv1.SearchMemoriesResponse).GetAgentHints().GetWarnings() {
		if w.GetType() == "deprecation" {
			found = true
			if w.GetSuggestedFix() != "use search-memories-v2 instead" || len(w.GetRelatedIds()) != 1 || w.GetRelatedIds()[0] != "search-memories-v2" {
				t.Errorf("warning %v: want the replacement", w)
			}
		}
	}
	if !found {
		t.Error("no deprecation warning in the hints")
	}
	if !logs.contains("deprecated tool called") {
		t.Errorf("log %q: want the deprecated call logged", logs.String())
	}
}
