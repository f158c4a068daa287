package upstream

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
	"github.com/toolsvc/toolsvc/internal/base/mcpclient"
	"github.com/toolsvc/toolsvc/internal/base/redact"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
)

// The MCP client toolsvc speaks to upstream MCP servers: JSON-RPC 2.0 over
// Streamable HTTP or over a child process's stdin and stdout, in either
// revision (mcprevision.go): 2026-07-28 (server/discover, no session,
// every request naming its revision, client and capabilities in _meta) to
// a server that offers it, 2025-11-25 (initialize, notifications/initialized,
// a session over HTTP) to the others. Besides tools/list and tools/call
// (and what rides on the same request primitive), it relays what a server
// asks during a call to the client that made the call (mcpask.go):
// elicitation and sampling, as 2025 server-to-client requests or 2026
// input_required results; the server's progress; and the call's
// cancellation.

// Revisions the client speaks, and mcp.protocol's values.
const (
	// Revision2026 is the stateless revision: server/discover, no session.
	Revision2026 = "2026-07-28"
	// Revision2025 is the revision of the initialize handshake toolsvc
	// asks for; a server answering with an older one it supports is
	// accepted (toolsvc uses nothing that changed since 2025-03-26 but
	// the elicitation modes it declares).
	Revision2025 = "2025-11-25"
	// ProtocolAuto asks server/discover and falls back to 2025-11-25.
	ProtocolAuto = "auto"
)

// DefaultMaxResponseBytes bounds one message from an upstream MCP server
// that sets no mcp.max_response_bytes: 8 MiB, what toolsvc may be made to
// buffer for one answer (a tools/list of hundreds of tools with their
// schemas fits in well under 1 MiB).
const DefaultMaxResponseBytes = 8 << 20

var (
	// errUnreachable: the server could not be reached or went away
	// (retryable).
	errUnreachable = errors.New("unreachable")
	// errCredentialRefused: the server refused toolsvc's credential.
	errCredentialRefused = errors.New("credential refused")
	// errSessionGone: the server forgot the session (HTTP 404); the
	// client initializes again.
	errSessionGone = errors.New("session gone")
	// errMalformedMessage: the server's answer is not JSON-RPC.
	errMalformedMessage = errors.New("malformed message")
)

// httpStatusError is an HTTP answer that is neither a JSON-RPC message
// nor one of the statuses above (a 400 or 405 in plain text, say).
type httpStatusError struct{ code int }

func (e *httpStatusError) Error() string { return fmt.Sprintf("HTTP %d", e.code) }

// JSON-RPC error codes an upstream MCP server answers with.
const (
	rpcMethodNotFound = jsonrpc.CodeMethodNotFound
	rpcInvalidParams  = jsonrpc.CodeInvalidParams
	// rpcUnsupportedVersion is revision 2026-07-28's
	// UnsupportedProtocolVersionError.
	rpcUnsupportedVersion = -32022
	// rpcMissingCapability is revision 2026-07-28's
	// MissingRequiredClientCapabilityError.
	rpcMissingCapability = -32021
)

// mcpTransport carries one request and returns its response; what the
// server sends meanwhile (notifications, its own requests) goes to the
// client (mcpPeer).
type mcpTransport interface {
	// roundTrip sends body, a request with id (0: a notification, no
	// answer), with the extra HTTP headers hdr where the transport has
	// headers.
	roundTrip(ctx context.Context, body []byte, id int64, hdr http.Header) (*jsonrpc.Message, error)
	// answer sends the response to one of the server's requests.
	answer(body []byte)
	// cancelled tells the server that request id was abandoned.
	cancelled(id int64)
	// setProtocol records the revision spoken.
	setProtocol(v string)
	// reset forgets the session (HTTP) before initializing again.
	reset()
	close()
}

// mcpPeer is what a transport hands the client: the server's
// notifications, and its requests, related to the request whose stream
// carried them (0: unknown), which the client answers.
type mcpPeer interface {
	notification(m *jsonrpc.Message)
	serverRequest(m *jsonrpc.Message, related int64) []byte
}

// mcpClient is a connection to one upstream MCP server.
type mcpClient struct {
	t    mcpTransport
	next atomic.Int64
	// want is mcp.protocol: auto, 2026-07-28 or 2025-11-25.
	want string
	// onNotify hears the server's notifications; params only for
	// notifications/resources/updated (updatesPeer).
	onNotify func(method string, params ...json.RawMessage)
	// rev is the revision spoken once ready ("" before).
	rev atomic.Value

	// how says how rev was chosen, for the operator view.
	how atomic.Value

	mu    sync.Mutex
	ready bool
	// no2026: the server refused a 2026 request after listing the
	// revision (auto then speaks 2025-11-25).
	no2026 bool
	stop   chan struct{} // ends the 2026 listener
	// acked is closed when the current listen stream is acknowledged.
	acked atomic.Pointer[chan struct{}]
	ackMu sync.Mutex

	// calls are the requests in flight, by id; tokens the ones that asked
	// for progress, by progress token (mcpask.go).
	fmu    sync.Mutex
	calls  map[int64]*inflight
	tokens map[string]*inflight
	// elicited are the clients asked a URL-mode elicitation of a 2025
	// server, by its elicitationId, until the server says it completed.
	elicited map[string]callctx.ElicitationCompleter
}

func newMCPClient(cfg Config, logger *slog.Logger, onNotify func(method string, params ...json.RawMessage)) (*mcpClient, error) {
	c := &mcpClient{want: cfg.MCP.Protocol, onNotify: onNotify, calls: map[int64]*inflight{}, tokens: map[string]*inflight{}, elicited: map[string]callctx.ElicitationCompleter{}, stop: make(chan struct{})}
	if c.want == "" {
		c.want = ProtocolAuto
	}
	c.rev.Store("")
	c.how.Store("")
	if len(cfg.MCP.Command) > 0 {
		t, err := startStdio(cfg, logger, updatesPeer{c})
		if err != nil {
			return nil, err
		}
		c.t = t
		return c, nil
	}
	tlsCfg, err := clientTLS(cfg.TLS)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	tr.Proxy = nil // toolsvc's credential goes to the configured URL only
	c.t = &httpTransport{
		url: cfg.MCP.URL, token: cfg.token, peer: updatesPeer{c}, listens: onNotify != nil, limit: cfg.MCP.maxResponse(),
		client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
	return c, nil
}

// revision is the revision spoken ("" until the client is ready).
func (c *mcpClient) revision() string { return c.rev.Load().(string) }

// call sends method with params (an object: a map, or anything that
// encodes as one) and returns the result. The client connects first
// (server/discover or initialize), and again once when the server forgot
// the session. A 2026 server's input_required result is answered and the
// request sent again (mcpask.go); every request carries what its revision
// wants in _meta, a progressToken when the call's caller listens for
// progress, and is cancelled on the server when ctx ends.
func (c *mcpClient) call(ctx context.Context, method string, params any, hdr http.Header) (json.RawMessage, error) {
	p, err := paramsObject(params)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if err := c.initialize(ctx); err != nil {
			return nil, err
		}
		res, err := c.exchange(ctx, method, p, hdr)
		var re *jsonrpc.Error
		switch {
		case errors.Is(err, errSessionGone) && attempt == 0:
			c.mu.Lock()
			c.ready = false
			c.t.reset()
			c.mu.Unlock()
			continue
		case errors.As(err, &re) && re.Code == rpcUnsupportedVersion && c.want == ProtocolAuto && c.revision() == Revision2026 && attempt == 0:
			// server/discover listed 2026-07-28 but a request in it is
			// refused (the Go SDK's server over HTTP with sessions does
			// so): speak 2025-11-25 to it from now on.
			c.mu.Lock()
			c.ready, c.no2026 = false, true
			c.rev.Store("")
			c.t.reset()
			c.mu.Unlock()
			continue
		}
		return res, err
	}
}

// paramsObject is params as a JSON object toolsvc can add _meta to.
func paramsObject(params any) (map[string]any, error) {
	switch p := params.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return p, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out map[string]any
	if err := d.Decode(&out); err != nil || out == nil {
		return nil, fmt.Errorf("request params must be a JSON object, not %s", b)
	}
	return out, nil
}

// initialize connects: server/discover for a server that may speak
// 2026-07-28 (mcp.protocol auto or 2026-07-28), else, or when it answers
// that it does not (auto only), the 2025 handshake.
func (c *mcpClient) initialize(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready {
		return nil
	}
	why := "configured (mcp.protocol " + Revision2025 + ")"
	if c.no2026 {
		why = "fallback: a request in " + Revision2026 + " was refused as an unsupported version after server/discover listed it"
	}
	if c.want != Revision2025 && !c.no2026 {
		err := c.discover(ctx)
		if err == nil {
			c.how.Store("discovered (server/discover)")
			if c.want == Revision2026 {
				c.how.Store("configured (mcp.protocol " + Revision2026 + ")")
			}
			c.rev.Store(Revision2026)
			c.t.setProtocol(Revision2026)
			c.ready = true
			if c.onNotify != nil {
				go c.listenModern(c.stop)
				c.waitListening(time.Second)
			}
			return nil
		}
		if c.want == Revision2026 || !fallsBack(err) {
			if c.want == Revision2026 {
				return fmt.Errorf("server/discover (mcp.protocol %s): %w", Revision2026, err)
			}
			return fmt.Errorf("server/discover: %w", err)
		}
		c.t.reset() // whatever the probe left (a session id) is not the handshake's
		why = "fallback: server/discover answered " + err.Error()
	}
	res, err := c.request(ctx, "initialize", map[string]any{
		"protocolVersion": Revision2025,
		"capabilities":    askCapabilities(),
		"clientInfo":      clientInfo,
	}, nil, "")
	if err != nil {
		return err
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools *struct{} `json:"tools"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(res, &init); err != nil || init.ProtocolVersion == "" {
		return fmt.Errorf("%w: initialize result has no protocolVersion", errMalformedMessage)
	}
	if init.Capabilities.Tools == nil {
		return errors.New("the server does not offer tools (no tools capability)")
	}
	c.t.setProtocol(init.ProtocolVersion)
	if _, err := c.t.roundTrip(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), 0, nil); err != nil {
		return err
	}
	c.rev.Store(init.ProtocolVersion)
	c.how.Store(why)
	c.ready = true
	return nil
}

// protocolState is the revision spoken and how it was chosen, for the
// operator view (empty before the client connected).
func (c *mcpClient) protocolState() (revision, how string) {
	return c.revision(), c.how.Load().(string)
}

// request sends one request in revision rev and returns its result. It
// tracks the request while it is in flight (the server's questions and
// progress find their call by it) and tells the server when ctx ends
// before the answer.
func (c *mcpClient) request(ctx context.Context, method string, params map[string]any, hdr http.Header, rev string) (json.RawMessage, error) {
	id := c.next.Add(1)
	call := &inflight{ctx: ctx, asks: method == "tools/call" || method == "prompts/get" || method == "resources/read"}
	meta := map[string]any{}
	token := ""
	if callctx.HasProgress(ctx) && method != "initialize" {
		meta["progressToken"] = id
		token = strconv.FormatInt(id, 10)
	}
	if rev == Revision2026 {
		maps.Copy(meta, modernMeta(ctx))
		hdr = modernHeaders(hdr, method, params)
	}
	if len(meta) > 0 {
		params = withMeta(params, meta)
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	c.track(id, token, call)
	defer c.untrack(id, token)
	msg, err := c.t.roundTrip(ctx, body, id, hdr)
	if err != nil {
		if ctx.Err() != nil {
			c.t.cancelled(id)
		}
		if ae := call.failure(); ae != nil && ctx.Err() == nil {
			return nil, ae
		}
		return nil, err
	}
	if re, err := msg.ReadError(); err != nil {
		return nil, fmt.Errorf("%w: %w", errMalformedMessage, err)
	} else if re != nil {
		if ae := call.failure(); ae != nil {
			return nil, ae
		}
		return nil, re
	}
	if len(msg.Result) == 0 || msg.Result[0] != '{' {
		return nil, fmt.Errorf("%w: the answer to %s has no result object", errMalformedMessage, method)
	}
	if ae := call.failure(); ae != nil && isErrorResult(msg.Result) {
		return nil, ae // the tool failed because its question could not be put
	}
	return msg.Result, nil
}

// withMeta is params with add merged into its _meta (params is not
// changed: a caller may reuse it).
func withMeta(params map[string]any, add map[string]any) map[string]any {
	out := maps.Clone(params)
	if out == nil {
		out = map[string]any{}
	}
	meta := map[string]any{}
	switch m := params["_meta"].(type) {
	case map[string]any:
		maps.Copy(meta, m)
	case nil:
	default:
		if b, err := json.Marshal(m); err == nil {
			_ = json.Unmarshal(b, &meta)
		}
	}
	maps.Copy(meta, add)
	out["_meta"] = meta
	return out
}

// isErrorResult reports whether a tools/call result says isError.
func isErrorResult(res json.RawMessage) bool {
	return string(jsonrpc.Member(res, "isError")) == "true"
}

func (c *mcpClient) close() {
	c.mu.Lock()
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.mu.Unlock()
	c.t.close()
}

// decodeMessage reads one JSON-RPC message from the server with the
// strict core the bridge reads its clients' requests with
// (internal/base/jsonrpc, jsonrpc.Answer: duplicate and case-variant keys,
// bytes that are not UTF-8): an upstream is an untrusted boundary, read as
// strictly as clients' requests are.
func decodeMessage(b []byte) (*jsonrpc.Message, error) {
	msg, err := jsonrpc.Read(b, jsonrpc.Answer)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errMalformedMessage, err)
	}
	if msg.JSONRPC != "2.0" {
		return nil, fmt.Errorf("%w: not a JSON-RPC 2.0 message", errMalformedMessage)
	}
	return &msg, nil
}

// isResponse reports whether m answers the request with id.
func isResponse(m *jsonrpc.Message, id int64) bool {
	return m.Method == "" && string(m.ID) == strconv.FormatInt(id, 10)
}

// --- Streamable HTTP ---

type httpTransport struct {
	url    string
	token  string
	limit  int64 // the largest message read (mcp.max_response_bytes)
	client *http.Client
	peer   mcpPeer
	// listens: someone hears the server's notifications (a 2025 GET
	// stream is kept open for them).
	listens bool

	mu        sync.Mutex
	session   string
	protocol  string
	listening bool
	stop      chan struct{}
	closed    bool
}

// setProtocol records the negotiated revision and, once, starts listening
// for a 2025 server's notifications (a 2026 server has no session and no
// GET stream: the client opens subscriptions/listen).
func (t *httpTransport) setProtocol(v string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.protocol = v
	if v == Revision2026 {
		t.session = ""
		return
	}
	if !t.listening && !t.closed && t.listens {
		t.listening = true
		t.stop = make(chan struct{})
		go t.listen(t.stop)
	}
}

// listen keeps a GET event stream open for the server's notifications
// (notifications/tools/list_changed), reconnecting with a growing pause,
// until the transport closes or the server says it offers no stream (405).
func (t *httpTransport) listen(stop chan struct{}) {
	pause := 500 * time.Millisecond
	for {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-stop:
			case <-ctx.Done():
			}
			cancel()
		}()
		status := t.stream(ctx)
		cancel()
		if status == http.StatusMethodNotAllowed {
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 30*time.Second)
		if status == http.StatusOK {
			pause = 500 * time.Millisecond
		}
	}
}

// stream reads one GET event stream to its end and returns its HTTP
// status (0 when the request failed).
func (t *httpTransport) stream(ctx context.Context) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return 0
	}
	req.Header.Set("Accept", "text/event-stream")
	t.setSession(req)
	resp, err := t.client.Do(req)
	if err != nil {
		return 0
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode
	}
	_, _ = t.readEvents(ctx, resp.Body, 0)
	return http.StatusOK
}

// setSession sets toolsvc's own credential for this upstream and the
// session and protocol version the server gave, if any; it returns the
// session sent ("" for none).
func (t *httpTransport) setSession(req *http.Request) string {
	if t.token != "" && req.Header.Get("Authorization") == "" { // a call's own (a caller's credential) wins
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	t.mu.Lock()
	session, protocol := t.session, t.protocol
	t.mu.Unlock()
	mcpclient.SetSession(req.Header, session, protocol)
	return session
}

func (t *httpTransport) reset() {
	t.mu.Lock()
	t.session, t.protocol = "", ""
	t.mu.Unlock()
}

func (t *httpTransport) roundTrip(ctx context.Context, body []byte, id int64, hdr http.Header) (*jsonrpc.Message, error) {
	req, err := mcpclient.NewPost(ctx, t.url, body, "", "")
	if err != nil {
		return nil, err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	session := t.setSession(req)
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The client's error quotes the URL, query and fragment included.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			ue.URL = redact.URL(ue.URL)
		}
		return nil, fmt.Errorf("%w: %w", errUnreachable, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%w: HTTP %d", errCredentialRefused, resp.StatusCode)
	case resp.StatusCode == http.StatusNotFound && session != "":
		return nil, errSessionGone
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, fmt.Errorf("%w: HTTP %d", errUnreachable, resp.StatusCode)
	case resp.StatusCode >= 300 && id != 0 && ct == "application/json":
		// Revision 2026-07-28 answers some errors with a 4xx status and
		// the JSON-RPC error as the body (404 for an unknown method, 400
		// for an unsupported revision); a 2025 server may too.
		if msg, err := t.readJSON(ctx, resp.Body, id); err == nil && len(msg.Error) > 0 {
			return msg, nil
		}
		return nil, fmt.Errorf("%w: %w", errMalformedMessage, &httpStatusError{resp.StatusCode})
	case resp.StatusCode >= 300:
		return nil, fmt.Errorf("%w: %w", errMalformedMessage, &httpStatusError{resp.StatusCode})
	}
	if s := resp.Header.Get(mcpclient.HeaderSessionID); s != "" && session == "" && req.Header.Get(HeaderMcpMethod) == "" {
		t.mu.Lock()
		t.session = s
		t.mu.Unlock()
	}
	if id == 0 {
		return nil, nil // a notification: 202 Accepted, no body
	}
	if mcpclient.IsEventStream(resp) {
		return t.readEvents(ctx, resp.Body, id)
	}
	return t.readJSON(ctx, resp.Body, id)
}

// readJSON reads a response that is one JSON-RPC message, the response
// to request id.
func (t *httpTransport) readJSON(ctx context.Context, r io.Reader, id int64) (*jsonrpc.Message, error) {
	b, err := io.ReadAll(io.LimitReader(r, t.limit+1))
	if err != nil {
		return nil, t.readError(ctx, err)
	}
	if int64(len(b)) > t.limit {
		return nil, tooLarge(t.limit)
	}
	msg, err := decodeMessage(b)
	if err != nil {
		return nil, err
	}
	if !isResponse(msg, id) {
		return nil, fmt.Errorf("%w: the answer is not the response to request %d", errMalformedMessage, id)
	}
	return msg, nil
}

// readEvents reads an SSE stream until the response to id: notifications
// on the way go to the client; the server's requests (a question during a
// call) are answered by the client, related to request id (0 on the GET
// stream: unknown), without holding up the stream.
func (t *httpTransport) readEvents(ctx context.Context, r io.Reader, id int64) (*jsonrpc.Message, error) {
	var (
		answer *jsonrpc.Message
		bad    error
	)
	done, err := mcpclient.ReadEvents(r, int(t.limit), func(data []byte) bool {
		msg, err := decodeMessage(bytes.Clone(data))
		if err != nil {
			bad = err
			return true
		}
		if isResponse(msg, id) {
			answer = msg
			return true
		}
		switch {
		case msg.Method != "" && len(msg.ID) == 0:
			t.peer.notification(msg)
		case msg.Method != "":
			go t.answer(t.peer.serverRequest(msg, id))
		}
		return false
	})
	switch {
	case done && bad != nil:
		return nil, bad
	case done:
		return answer, nil
	case err != nil && errors.Is(err, bufio.ErrTooLong):
		return nil, tooLarge(t.limit)
	case err != nil:
		return nil, t.readError(ctx, err)
	}
	return nil, fmt.Errorf("%w: the event stream ended before the response", errUnreachable)
}

func (t *httpTransport) readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: %w", errUnreachable, err)
}

// answer POSTs the response to one of the server's requests on the
// session (202 Accepted, no body).
func (t *httpTransport) answer(body []byte) {
	t.post(body)
}

// cancelled tells a 2025 server, on the session, that request id was
// abandoned. A 2026 request has no session: the aborted POST is its
// cancellation.
func (t *httpTransport) cancelled(id int64) {
	t.mu.Lock()
	modern := t.protocol == Revision2026
	t.mu.Unlock()
	if modern {
		return
	}
	go t.post(cancelledNotification(id))
}

// post sends a message that expects no answer, within a few seconds.
func (t *httpTransport) post(body []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	req, err := mcpclient.NewPost(ctx, t.url, body, "", "")
	if err != nil {
		return
	}
	t.setSession(req)
	if resp, err := t.client.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}
}

// notifyTimeout bounds delivering a message that expects no answer.
const notifyTimeout = 5 * time.Second

// cancelledNotification is notifications/cancelled for request id.
func cancelledNotification(id int64) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"the caller cancelled the call or its deadline passed"}}`, id)
}

func (t *httpTransport) close() {
	t.mu.Lock()
	session, protocol := t.session, t.protocol
	t.closed = true
	if t.stop != nil {
		close(t.stop)
		t.stop = nil
	}
	t.mu.Unlock()
	if session == "" {
		return
	}
	// End the session politely; a server that does not allow it says 405.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.url, nil)
	if err != nil {
		return
	}
	mcpclient.SetSession(req.Header, session, protocol)
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	if resp, err := t.client.Do(req); err == nil {
		_ = resp.Body.Close()
	}
	t.client.CloseIdleConnections()
}

// --- stdio ---

// stdioTransport runs the server as a child process: one JSON-RPC message
// per line on its stdin and stdout. Its stderr goes to toolsvc's log.
type stdioTransport struct {
	limit int64 // the largest message read (mcp.max_response_bytes)
	cmd   *exec.Cmd
	stdin io.WriteCloser
	peer  mcpPeer

	wmu     sync.Mutex // one writer at a time
	mu      sync.Mutex
	pending map[int64]chan *jsonrpc.Message
	err     error // why the process is gone, once it is
	done    chan struct{}
}

// stdioEnv is what a child process inherits of toolsvc's environment: the
// basics a program needs, the variables the upstreams file names, and
// the upstream's credential. Nothing else (toolsvc's own secrets, other
// upstreams' tokens) reaches it.
func stdioEnv(cfg Config) []string {
	var env []string
	for _, k := range append([]string{"PATH", "HOME", "TMPDIR", "LANG", "TZ"}, cfg.MCP.Env...) {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if cfg.token != "" {
		env = append(env, "TOOLSVC_UPSTREAM_TOKEN="+cfg.token)
	}
	return env
}

func startStdio(cfg Config, logger *slog.Logger, peer mcpPeer) (*stdioTransport, error) {
	cmd := exec.Command(cfg.MCP.Command[0], cfg.MCP.Command[1:]...) // #nosec G204 -- the operator's upstreams file names the command
	cmd.Env = stdioEnv(cfg)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start %s: %w", errUnreachable, cfg.MCP.Command[0], err)
	}
	t := &stdioTransport{limit: cfg.MCP.maxResponse(), cmd: cmd, stdin: stdin, peer: peer, pending: map[int64]chan *jsonrpc.Message{}, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logger.Info("upstream stderr", slog.String("upstream", cfg.Name), slog.String("line", sc.Text()))
		}
	}()
	go t.read(stdout)
	return t, nil
}

func (t *stdioTransport) read(stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readLine(r, t.limit)
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		msg, derr := decodeMessage(line)
		if derr != nil {
			err = derr
			break
		}
		switch {
		case msg.Method != "" && len(msg.ID) == 0:
			t.peer.notification(msg)
		case msg.Method != "":
			// A question during a call: stdio carries no relation to the
			// request, the client finds the call (mcpask.go).
			go t.answer(t.peer.serverRequest(msg, 0))
		case msg.Method == "":
			id, perr := strconv.ParseInt(string(msg.ID), 10, 64)
			if perr != nil {
				continue
			}
			t.mu.Lock()
			ch := t.pending[id]
			delete(t.pending, id)
			t.mu.Unlock()
			if ch != nil {
				ch <- msg
			}
		}
	}
	_ = t.cmd.Wait()
	t.mu.Lock()
	if errors.Is(err, errMalformedMessage) {
		t.err = err
	} else {
		t.err = fmt.Errorf("%w: the server process ended", errUnreachable)
	}
	for id, ch := range t.pending {
		close(ch)
		delete(t.pending, id)
	}
	t.mu.Unlock()
	close(t.done)
}

// readLine reads one line of at most limit bytes.
func readLine(r *bufio.Reader, limit int64) ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.ReadSlice('\n')
		out = append(out, chunk...)
		if int64(len(out)) > limit {
			return nil, tooLarge(limit)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return out, err
		}
	}
}

func (t *stdioTransport) roundTrip(ctx context.Context, body []byte, id int64, _ http.Header) (*jsonrpc.Message, error) {
	var ch chan *jsonrpc.Message
	t.mu.Lock()
	if t.err != nil {
		err := t.err
		t.mu.Unlock()
		return nil, err
	}
	if id != 0 {
		ch = make(chan *jsonrpc.Message, 1)
		t.pending[id] = ch
	}
	t.mu.Unlock()
	t.wmu.Lock()
	_, err := t.stdin.Write(append(body, '\n'))
	t.wmu.Unlock()
	if err != nil {
		t.forget(id)
		return nil, fmt.Errorf("%w: %w", errUnreachable, err)
	}
	if id == 0 {
		return nil, nil
	}
	select {
	case msg, ok := <-ch:
		if !ok {
			t.mu.Lock()
			defer t.mu.Unlock()
			return nil, t.err
		}
		return msg, nil
	case <-ctx.Done():
		t.forget(id) // the client tells the server (cancelled)
		return nil, ctx.Err()
	}
}

// answer writes the response to one of the server's requests.
func (t *stdioTransport) answer(body []byte) { t.write(body) }

// cancelled tells the server, in either revision, to stop working on
// request id.
func (t *stdioTransport) cancelled(id int64) { t.write(cancelledNotification(id)) }

func (t *stdioTransport) write(body []byte) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	_, _ = t.stdin.Write(append(body, '\n'))
}

func (t *stdioTransport) setProtocol(string) {}

func (t *stdioTransport) forget(id int64) {
	t.mu.Lock()
	delete(t.pending, id)
	t.mu.Unlock()
}

func (t *stdioTransport) reset() {}

// close ends the child: stdin closed (the MCP way to ask a stdio server
// to exit), then SIGKILL if it has not after a moment.
func (t *stdioTransport) close() {
	_ = t.stdin.Close()
	select {
	case <-t.done:
	case <-time.After(2 * time.Second):
		_ = t.cmd.Process.Kill()
		<-t.done
	}
}

// clientTLS is the TLS configuration of an https MCP server (nil for
// plain http to loopback).
func clientTLS(t TLS) (*tls.Config, error) {
	if t.Mode == "plaintext" {
		return nil, nil
	}
	return tlsConfig(t)
}

// principalHeaders are the HTTP headers of the principal, the same facts
// as the gRPC metadata of forward.go.
func principalHeaders(md map[string][]string) http.Header {
	h := http.Header{}
	for k, vs := range md {
		if k == "authorization" {
			continue
		}
		h[http.CanonicalHeaderKey(k)] = vs
	}
	return h
}

// tooLarge is the error of a message over the upstream's size limit.
func tooLarge(limit int64) error {
	return fmt.Errorf("%w: a message is larger than mcp.max_response_bytes (%d bytes)", errMalformedMessage, limit)
}
