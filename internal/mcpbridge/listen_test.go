package mcpbridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/mcpbridge"
)

// listenBody is a 2026-07-28 subscriptions/listen request for tool-list
// and resource-list changes.
func listenBody(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{` + modernMeta +
		`,"notifications":{"toolsListChanged":true,"resourcesListChanged":true}}}`
}

// eventStream reads the messages of an open HTTP event stream.
type eventStream struct {
	msgs   chan response
	cancel context.CancelFunc
	status int
}

// openListen POSTs subscriptions/listen with credential key and keeps the
// response stream open until the returned stream is cancelled.
func openListen(tb testing.TB, base, key, id string) *eventStream {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(listenBody(id)))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header = modernHeaders("subscriptions/listen", "")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	s := &eventStream{msgs: make(chan response, 16), cancel: cancel, status: resp.StatusCode}
	go func() {
		defer resp.Body.Close()
		defer close(s.msgs)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var r response
				if json.Unmarshal([]byte(data), &r) == nil {
					s.msgs <- r
				}
			}
		}
	}()
	tb.Cleanup(cancel)
	return s
}

// next is the stream's next message; ok is false when it ended.
func (s *eventStream) next(tb testing.TB) (response, bool) {
	tb.Helper()
	select {
	case r, ok := <-s.msgs:
		return r, ok
	case <-time.After(10 * time.Second):
		tb.Fatal("no message on the listen stream within 10s")
		return response{}, false
	}
}

// subscriptionOf is the io.modelcontextprotocol/subscriptionId of a
// message's params (a notification) or result (the closing response).
func subscriptionOf(tb testing.TB, r response) string {
	tb.Helper()
	raw := r.Params
	if raw == nil {
		raw = r.Result
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		tb.Fatalf("%s: %v", raw, err)
	}
	return string(p.Meta["io.modelcontextprotocol/subscriptionId"])
}

// wantAck checks the acknowledgment: first, naming the subscription and
// what listenBody asked.
func wantAck(tb testing.TB, r response, id string) {
	tb.Helper()
	var p struct {
		Notifications map[string]any `json:"notifications"`
	}
	if r.Method != "notifications/subscriptions/acknowledged" || subscriptionOf(tb, r) != id ||
		json.Unmarshal(r.Params, &p) != nil || len(p.Notifications) != 2 || p.Notifications["toolsListChanged"] != true || p.Notifications["resourcesListChanged"] != true {
		tb.Fatalf("first message = %s %s, want the acknowledgment of subscription %s with toolsListChanged and resourcesListChanged", r.Method, r.Params, id)
	}
}

// wantListChanged checks a tool-list change of subscription id: no content
// but the subscription, so it tells a listener nothing its credential
// could not see.
func wantListChanged(tb testing.TB, r response, id string) {
	tb.Helper()
	var p map[string]json.RawMessage
	if r.Method != "notifications/tools/list_changed" || r.ID != nil || json.Unmarshal(r.Params, &p) != nil || len(p) != 1 || subscriptionOf(tb, r) != id {
		tb.Fatalf("message = %s %s, want notifications/tools/list_changed of subscription %s and nothing else", r.Method, r.Params, id)
	}
}

// settle waits until the bridge holds no listener and no goroutine is
// left serving a connection: none runs the bridge's code (or the test's
// stdio pump) apart from the server's background jobs, which the server
// starts, possibly after the test began, and stops at its cleanup.
func settle(tb testing.TB, b *mcpbridge.Bridge) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := servingGoroutines()
		if b.Listeners() == 0 && len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("after disconnect: %d listeners, %d goroutines still serving:\n%s", b.Listeners(), len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// servingGoroutines returns the stacks of the goroutines serving an MCP
// connection: in the bridge's methods, its stdio reader or the test's stdio
// pump (not a test of the package waiting to run in parallel), and not one
// of the jobs (started by the server's errgroup or by Bridge.Run).
func servingGoroutines() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var left []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "created by golang.org/x/sync/errgroup.") || strings.Contains(g, "created by github.com/toolsvc/toolsvc/internal/mcpbridge.(*Bridge).Run") {
			continue
		}
		if strings.Contains(g, "toolsvc/internal/mcpbridge.(*Bridge)") || strings.Contains(g, "toolsvc/internal/mcpbridge/stdio.readLines") || strings.Contains(g, "mcpbridge_test.startStdio") {
			left = append(left, g)
		}
	}
	return left
}

// TestListenHTTP opens subscriptions/listen streams of two credentials
// over Streamable HTTP: each is acknowledged, hears the tool-list change
// under its own subscription id with no content, ends when its client
// closes it without leaving a listener or goroutine behind, and a
// listener's credential is checked as on any request.
func TestListenHTTP(t *testing.T) {
	srv := newAuthServer(t, nil)
	b := srv.MCP()

	all := openListen(t, srv.HTTP, keyAll, "7")
	reader := openListen(t, srv.HTTP, keyKnowledge, `"listen-r"`)
	for _, s := range []*eventStream{all, reader} {
		if s.status != http.StatusOK {
			t.Fatalf("listen: HTTP %d", s.status)
		}
	}
	first, _ := all.next(t)
	wantAck(t, first, "7")
	first, _ = reader.next(t)
	wantAck(t, first, `"listen-r"`)
	if n := b.Listeners(); n != 2 {
		t.Fatalf("Listeners() = %d, want 2", n)
	}

	if err := mcpbridge.SyntheticTools(b, 3); err != nil {
		t.Fatal(err)
	}
	r, _ := all.next(t)
	wantListChanged(t, r, "7")
	r, _ = reader.next(t)
	wantListChanged(t, r, `"listen-r"`)

	// The listener asked nothing else, and a stream closed by its client
	// is a cancelled subscription: the server forgets it.
	all.cancel()
	reader.cancel()
	settle(t, b)

	// A refused credential is a 401 with the challenge, as for any
	// modern request; a listen without its filter is invalid params.
	c := newClient(t, srv.HTTP)
	c.header.Set("Authorization", "Bearer not-a-key")
	resp, _ := c.post(listenBody("1"), modernHeaders("subscriptions/listen", ""))
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("listen with a bad key: HTTP %d", resp.StatusCode)
	}
	c.header.Set("Authorization", "Bearer "+keyAll)
	resp, body := c.post(`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{`+modernMeta+`}}`, modernHeaders("subscriptions/listen", ""))
	if msgs := decodeMessages(t, resp.Header.Get("Content-Type"), body); msgs[len(msgs)-1].Error == nil || msgs[len(msgs)-1].Error.Code != mcpbridge.CodeInvalidParams {
		t.Fatalf("listen without notifications: %s", body)
	}
	// Task notifications need the Tasks extension declared (-32021).
	resp, body = c.post(`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{`+modernMeta+`,"notifications":{"taskIds":["x"]}}}`, modernHeaders("subscriptions/listen", ""))
	if msgs := decodeMessages(t, resp.Header.Get("Content-Type"), body); resp.StatusCode != http.StatusBadRequest || msgs[0].Error == nil || msgs[0].Error.Code != mcpbridge.CodeMissingClientCapability {
		t.Fatalf("listen for tasks without the capability: %s", body)
	}
	// A filter the server honours nothing of (a resource no provider
	// serves) is acknowledged (empty) and ends at once.
	resp, body = c.post(`{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{`+modernMeta+`,"notifications":{"resourceSubscriptions":["nowhere://x"]}}}`, modernHeaders("subscriptions/listen", ""))
	msgs := decodeMessages(t, resp.Header.Get("Content-Type"), body)
	if resp.StatusCode != http.StatusOK || len(msgs) != 2 || msgs[0].Method != "notifications/subscriptions/acknowledged" || string(msgs[1].ID) != "4" || subscriptionOf(t, msgs[1]) != "4" {
		t.Fatalf("listen for nothing supported: HTTP %d %s", resp.StatusCode, body)
	}
	// 2025-era requests do not know the method.
	c.initialize("old")
	if r := c.call("subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}); r.Error == nil || r.Error.Code != mcpbridge.CodeMethodNotFound {
		t.Fatalf("2025 listen = %+v", r)
	}
}

// TestListenShutdown ends open listen streams when the server shuts down:
// each request is answered with its closing result first.
func TestListenShutdown(t *testing.T) {
	t.Parallel()
	srv := newAuthServer(t, nil)
	s := openListen(t, srv.HTTP, keyAll, "11")
	first, _ := s.next(t)
	wantAck(t, first, "11")
	// A 2025 session's GET stream ends too (its client reconnects).
	c := newClient(t, srv.HTTP)
	c.header.Set("Authorization", "Bearer "+keyAll)
	c.initialize("old")
	req, _ := http.NewRequest(http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+keyAll)
	req.Header.Set("Mcp-Session-Id", c.session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	getEnded := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); getEnded <- err }()

	srv.MCP().EndSubscriptions()
	select {
	case err := <-getEnded:
		if err != nil {
			t.Fatalf("GET stream: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the GET stream stayed open at shutdown")
	}
	r, ok := s.next(t)
	if !ok || string(r.ID) != "11" || r.Error != nil || subscriptionOf(t, r) != "11" || !strings.Contains(string(r.Result), `"resultType":"complete"`) {
		t.Fatalf("closing message = %+v (stream open: %v)", r, ok)
	}
	if _, open := s.next(t); open {
		t.Fatal("the stream stayed open after its closing result")
	}
}

// TestListenStdio serves subscriptions/listen over stdio: acknowledgment,
// the tool-list change under the subscription id (and no unasked 2025
// notification to a client that never initialized), cancellation by
// notifications/cancelled without a response, a bound per principal that
// ends the oldest listener gracefully, and no listener left once stdin
// closes.
func TestListenStdio(t *testing.T) {
	srv := newAuthServer(t, nil)
	b := srv.MCP()
	c := startStdio(t, b, "Bearer "+keyAll)

	c.send(listenBody(`"s1"`))
	wantAck(t, c.next(), `"s1"`)
	if err := mcpbridge.SyntheticTools(b, 2); err != nil {
		t.Fatal(err)
	}
	wantListChanged(t, c.next(), `"s1"`)

	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s1"}}`)
	// The next line must be the ping's answer: no response to the
	// cancelled subscription, no notification.
	c.send(`{"jsonrpc":"2.0","id":"p","method":"server/discover","params":{` + modernMeta + `}}`)
	if r := c.next(); string(r.ID) != `"p"` {
		t.Fatalf("after cancelling: %+v, want the server/discover answer", r)
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.Listeners() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := b.Listeners(); n != 0 {
		t.Fatalf("Listeners() after cancel = %d", n)
	}

	// The 17th listener of one principal ends its oldest one, answered.
	// (Requests run concurrently: b1 is acknowledged, hence registered,
	// before the others are sent.)
	c.send(listenBody(`"b1"`))
	wantAck(t, c.next(), `"b1"`)
	for i := 2; i <= 17; i++ {
		c.send(listenBody(`"b` + itoa(i) + `"`))
	}
	acks, closed := 1, ""
	for acks < 17 || closed == "" {
		r := c.next()
		switch {
		case r.Method == "notifications/subscriptions/acknowledged":
			acks++
		case r.ID != nil && r.Result != nil:
			closed = string(r.ID)
			if subscriptionOf(t, r) != closed {
				t.Fatalf("closing result %s names another subscription", r.Result)
			}
		default:
			t.Fatalf("unexpected %+v", r)
		}
	}
	if closed != `"b1"` || b.Listeners() != 16 {
		t.Fatalf("closed %s with %d listeners open, want b1 and 16", closed, b.Listeners())
	}

	// A listen inside a batch (revision 2025-03-26) would hold the
	// connection's reading: refused.
	old := startStdio(t, b, "Bearer "+keyAll)
	old.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"batcher","version":"1"}}}`)
	old.next()
	old.send(`[` + listenBody("2") + `]`)
	if !old.out.Scan() || !strings.Contains(old.out.Text(), `"code":-32600`) || !strings.Contains(old.out.Text(), "stream of its own") {
		t.Fatalf("listen in a batch = %s", old.out.Text())
	}
	old.in.Close()

	// stdin closing ends every subscription of the connection.
	c.in.Close()
	settle(t, b)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
