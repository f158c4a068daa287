package streamhttp

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestEventStream: an event stream's headers (no caching, no proxy
// buffering), a message as one "message" event, a comment as a comment
// line, each flushed.
func TestEventStream(t *testing.T) {
	rec := httptest.NewRecorder()
	s := OpenEventStream(rec)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if err := s.Comment("stream open"); err != nil {
		t.Fatal(err)
	}
	if err := s.Message([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)); err != nil {
		t.Fatal(err)
	}
	want := ": stream open\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	if got := rec.Body.String(); got != want {
		t.Fatalf("body = %q, want %q", got, want)
	}
	if !rec.Flushed {
		t.Fatal("the events were not flushed")
	}
}
