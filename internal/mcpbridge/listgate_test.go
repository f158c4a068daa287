package mcpbridge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
)

// heldListing answers ListTools with no tools once release is closed,
// counting the listings that reached it.
type heldListing struct {
	release chan struct{}
	reached atomic.Int32
}

func (h *heldListing) Invoke(ctx context.Context, _ string, _, reply any, _ ...grpc.CallOption) error {
	h.reached.Add(1)
	select {
	case <-h.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	*reply.(*toolsvcv1.ListToolsResponse) = toolsvcv1.ListToolsResponse{}
	return nil
}

func (h *heldListing) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	panic("no streams")
}

// TestListMaxInFlight: with a cap of 1, a second tools/list waits while
// the first is served and never reaches ToolService meanwhile; it is
// served once the first is done.
func TestListMaxInFlight(t *testing.T) {
	held := &heldListing{release: make(chan struct{})}
	b, err := New(Config{Registry: testRegistry(t), Channel: held, Auth: auth.NewDevelopment(), Stateless: true, ListMaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	list := func() int {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		b.ServeHTTP(rec, req)
		return rec.Code
	}
	first, second := make(chan int, 1), make(chan int, 1)
	go func() { first <- list() }()
	deadline := time.Now().Add(5 * time.Second)
	for held.reached.Load() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the first tools/list never reached ToolService")
		}
		time.Sleep(5 * time.Millisecond)
	}
	go func() { second <- list() }()
	time.Sleep(200 * time.Millisecond)
	if n := held.reached.Load(); n != 1 {
		t.Fatalf("%d listings reached ToolService with a cap of 1", n)
	}
	close(held.release)
	for _, ch := range []chan int{first, second} {
		if code := <-ch; code != http.StatusOK {
			t.Errorf("tools/list: HTTP %d", code)
		}
	}
	if n := held.reached.Load(); n != 2 {
		t.Errorf("%d listings reached ToolService, want 2", n)
	}
}
