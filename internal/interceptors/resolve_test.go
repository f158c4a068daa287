package interceptors_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

func runResolve(t *testing.T, method string, req any) (*interceptors.Call, *fakeNext) {
	t.Helper()
	c := &interceptors.Call{FullMethod: method}
	next := &fakeNext{}
	if _, err := runStep(context.Background(), interceptors.ResolveStep(memRegistry(t)), c, req, next); err != nil {
		t.Fatalf("resolve refused by itself: %v", err)
	}
	// Resolve never answers: every outcome waits for auth and policy.
	if next.count() != 1 {
		t.Fatalf("handler ran %d times, want 1", next.count())
	}
	return c, next
}

func TestResolveFindsTheToolOfItsMethod(t *testing.T) {
	req := &memoryv1.SearchMemoriesRequest{Query: "q"}
	c, _ := runResolve(t, searchMethod, req)
	if c.Tool == nil || c.Tool.FullMethod != searchMethod {
		t.Fatalf("tool %v, want the one of %s", c.Tool, searchMethod)
	}
	if c.Request != req || c.Generic {
		t.Errorf("request %v generic %v, want the RPC's own request, not generic", c.Request, c.Generic)
	}
	if err := interceptors.Pending(c); err != nil {
		t.Errorf("pending %v", err)
	}
}

func TestResolveUnservedMethodIsPendingNotFound(t *testing.T) {
	c, _ := runResolve(t, "/toolsvc.gone.v1.GoneService/Gone", &memoryv1.SearchMemoriesRequest{})
	if c.Tool != nil {
		t.Fatalf("tool %v for an unserved method", c.Tool)
	}
	wantCode(t, interceptors.Pending(c), toolerr.NotFound)
}

func TestResolveToolServiceMethodsAreNotTools(t *testing.T) {
	c, _ := runResolve(t, "/toolsvc.v1.ToolService/ListTools", &toolsvcv1.ListToolsRequest{})
	if c.Tool != nil || interceptors.Pending(c) != nil {
		t.Fatalf("tool %v pending %v, want neither", c.Tool, interceptors.Pending(c))
	}
}

func TestResolveCallToolDecodesArguments(t *testing.T) {
	tool := memTool(t, searchMethod, nil)
	args, _ := structpb.NewStruct(map[string]any{"query": "coffee"})
	c, _ := runResolve(t, "/toolsvc.v1.ToolService/CallTool", &toolsvcv1.CallToolRequest{Name: tool.Name, Arguments: args})
	if c.Tool == nil || c.Tool.Name != tool.Name || !c.Generic {
		t.Fatalf("tool %v generic %v, want %s generic", c.Tool, c.Generic, tool.Name)
	}
	typed, ok := c.Request.(*memoryv1.SearchMemoriesRequest)
	if !ok || typed.GetQuery() != "coffee" {
		t.Fatalf("request %v, want the decoded SearchMemoriesRequest", c.Request)
	}
	if err := interceptors.Pending(c); err != nil {
		t.Errorf("pending %v", err)
	}
}

func TestResolveCallToolErrorsWaitForPolicy(t *testing.T) {
	c, _ := runResolve(t, "/toolsvc.v1.ToolService/CallTool", &toolsvcv1.CallToolRequest{Name: "no-such-tool"})
	if c.Tool != nil {
		t.Fatalf("tool %v for an unknown name", c.Tool)
	}
	wantCode(t, interceptors.Pending(c), toolerr.NotFound)

	tool := memTool(t, searchMethod, nil)
	args, _ := structpb.NewStruct(map[string]any{"query": "q", "noSuchField": 1})
	c, _ = runResolve(t, "/toolsvc.v1.ToolService/CallTool", &toolsvcv1.CallToolRequest{Name: tool.Name, Arguments: args})
	if c.Tool == nil {
		t.Fatal("a known tool with bad arguments must still resolve, for the policy to check")
	}
	wantCode(t, interceptors.Pending(c), toolerr.InvalidInput)
}
