package mcpbridge

import (
	"io"
	"net/http"
	"sync"
)

// eventStream is an open text/event-stream answer (Streamable HTTP): the
// headers every stream of the bridge sends, and events and comments
// written whole and flushed, one writer at a time (a call's notifications
// come from the tool's goroutine, keep-alives from the listener's).
type eventStream struct {
	mu sync.Mutex
	w  http.ResponseWriter
	rc *http.ResponseController
}

// openEventStream sends the headers and the 200 of an event stream.
func openEventStream(w http.ResponseWriter) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // a reverse proxy must pass events on at once
	w.WriteHeader(http.StatusOK)
	return &eventStream{w: w, rc: http.NewResponseController(w)}
}

// message sends one JSON-RPC message as an event; the error is the
// flush's (the client has gone).
func (s *eventStream) message(msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = io.WriteString(s.w, "event: message\ndata: ")
	_, _ = s.w.Write(msg)
	_, _ = io.WriteString(s.w, "\n\n")
	return s.rc.Flush()
}

// comment sends a comment line, which clients ignore: a stream's opening
// and its keep-alives.
func (s *eventStream) comment(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = io.WriteString(s.w, ": "+text+"\n\n")
	return s.rc.Flush()
}
