package streamhttp

import (
	"io"
	"net/http"
	"sync"
)

// EventStream is an open text/event-stream answer: the headers every
// stream of the transport sends, and events and comments
// written whole and flushed, one writer at a time (a call's notifications
// come from the tool's goroutine, keep-alives from the listener's).
type EventStream struct {
	mu sync.Mutex
	w  http.ResponseWriter
	rc *http.ResponseController
}

// OpenEventStream sends the headers and the 200 of an event stream.
func OpenEventStream(w http.ResponseWriter) *EventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // a reverse proxy must pass events on at once
	w.WriteHeader(http.StatusOK)
	return &EventStream{w: w, rc: http.NewResponseController(w)}
}

// Message sends one JSON-RPC message as an event; the error is the
// flush's (the client has gone).
func (s *EventStream) Message(msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = io.WriteString(s.w, "event: message\ndata: ")
	_, _ = s.w.Write(msg)
	_, _ = io.WriteString(s.w, "\n\n")
	return s.rc.Flush()
}

// Comment sends a comment line, which clients ignore: a stream's opening
// and its keep-alives.
func (s *EventStream) Comment(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = io.WriteString(s.w, ": "+text+"\n\n")
	return s.rc.Flush()
}

// Lazy is the answer of a request that may need an event stream: a plain
// JSON response unless something is sent before it (a 2025 tools/call
// whose tool asks its client), in which case the stream opens with that
// message and carries the response after it.
type Lazy struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	stream *EventStream
}

// NewLazy is the lazy answer on w.
func NewLazy(w http.ResponseWriter) *Lazy { return &Lazy{w: w} }

// Send sends msg on the stream, opening it first if need be.
func (l *Lazy) Send(msg []byte) error {
	l.mu.Lock()
	if l.stream == nil {
		l.stream = OpenEventStream(l.w)
	}
	s := l.stream
	l.mu.Unlock()
	return s.Message(msg)
}

// Opened is the stream if Send opened one, nil otherwise.
func (l *Lazy) Opened() *EventStream {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stream
}
