// Package mcpclient is the client side of MCP's Streamable HTTP transport
// that toolsvc's own clients share (the upstream client, `toolsvc probe`
// and the load tool's MCP driver): the POST of one JSON-RPC message with
// its headers (session, protocol revision, 2026-07-28's Mcp-Method and
// Mcp-Name) and the reading of the answer, a JSON body or an event
// stream. What each client makes of a message (strict JSON-RPC, or the
// few fields a load driver reads) stays its own.
package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"mime"
	"net/http"
)

// Header names of the transport.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "MCP-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
)

// accept is what a client accepts in answer to a POST.
const accept = "application/json, text/event-stream"

// NewPost returns the POST of body (one JSON-RPC message) to url, with
// Content-Type and Accept set, and the session and protocol revision
// headers when session and revision are not empty.
func NewPost(ctx context.Context, url string, body []byte, session, revision string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	SetSession(req.Header, session, revision)
	return req, nil
}

// SetSession sets the session and protocol revision headers of h, each
// when not empty.
func SetSession(h http.Header, session, revision string) {
	if session != "" {
		h.Set(HeaderSessionID, session)
	}
	if revision != "" {
		h.Set(HeaderProtocolVersion, revision)
	}
}

// SetMethod sets the headers revision 2026-07-28 asks of every request:
// Mcp-Method, and Mcp-Name when name is not empty (a tools/call's tool).
func SetMethod(h http.Header, method, name string) {
	h.Set(HeaderMethod, method)
	if name != "" {
		h.Set(HeaderName, name)
	}
}

// IsEventStream reports whether resp's body is an event stream.
func IsEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// ReadEvents reads the event stream r and calls event with the data of
// each event (its data lines, without "data:" and one space, joined by
// newlines) until event returns true; the data is valid only during the
// call. An event the stream ends in without its blank line is passed too.
// An event longer than limit bytes is bufio.ErrTooLong. It reports
// whether event returned true, and the read error, if any.
func ReadEvents(r io.Reader, limit int, event func(data []byte) (done bool)) (bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64<<10, limit)), limit)
	var data []byte
	pending := false
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if !pending {
				continue
			}
			done := event(data)
			data, pending = data[:0], false
			if done {
				return true, nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if pending {
				data = append(data, '\n')
			}
			line = line[len("data:"):]
			if len(line) > 0 && line[0] == ' ' {
				line = line[1:]
			}
			data, pending = append(data, line...), true
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	if pending && event(data) {
		return true, nil
	}
	return false, nil
}
