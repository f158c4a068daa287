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
	"mime"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsvc/toolsvc/internal/lib/jsonrpc"
	"github.com/toolsvc/toolsvc/internal/lib/redact"
)

// The MCP client toolsvc speaks to upstream MCP servers: JSON-RPC 2.0 over
// Streamable HTTP or over a child process's stdin and stdout, with the
// lifecycle (initialize, notifications/initialized) and nothing else of
// the protocol than tools/list and tools/call. It declares no client
// capability, so a server has nothing to ask of it (no sampling, no
// roots, no elicitation).

// mcpProtocolVersion is the revision toolsvc asks for. A server that
// answers with another revision it supports is accepted: toolsvc uses
// nothing that changed between 2025-03-26 and 2025-11-25.
const mcpProtocolVersion = "2025-06-18"

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

// JSON-RPC error codes an upstream MCP server answers with.
const (
	rpcMethodNotFound = jsonrpc.CodeMethodNotFound
	rpcInvalidParams  = jsonrpc.CodeInvalidParams
)

// mcpTransport carries one request and returns its response; notifications
// the server sends meanwhile go to the client's onNotify.
type mcpTransport interface {
	// roundTrip sends body, a request with id (0: a notification, no
	// answer), with the extra HTTP headers hdr where the transport has
	// headers.
	roundTrip(ctx context.Context, body []byte, id int64, hdr http.Header) (*jsonrpc.Message, error)
	// reset forgets the session (HTTP) before initializing again.
	reset()
	close()
}

// mcpClient is a connection to one upstream MCP server.
type mcpClient struct {
	t    mcpTransport
	next atomic.Int64

	mu    sync.Mutex
	ready bool
}

func newMCPClient(cfg Config, logger *slog.Logger, onNotify func(method string)) (*mcpClient, error) {
	if len(cfg.MCP.Command) > 0 {
		t, err := startStdio(cfg, logger, onNotify)
		if err != nil {
			return nil, err
		}
		return &mcpClient{t: t}, nil
	}
	tlsCfg, err := clientTLS(cfg.TLS)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	tr.Proxy = nil // toolsvc's credential goes to the configured URL only
	return &mcpClient{t: &httpTransport{
		url: cfg.MCP.URL, token: cfg.token, onNotify: onNotify, limit: cfg.MCP.maxResponse(),
		client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}}, nil
}

// call sends method with params and returns the result. The client
// initializes first, and again once when the server forgot the session.
func (c *mcpClient) call(ctx context.Context, method string, params any, hdr http.Header) (json.RawMessage, error) {
	for attempt := 0; ; attempt++ {
		if err := c.initialize(ctx); err != nil {
			return nil, err
		}
		res, err := c.request(ctx, method, params, hdr)
		if errors.Is(err, errSessionGone) && attempt == 0 {
			c.mu.Lock()
			c.ready = false
			c.t.reset()
			c.mu.Unlock()
			continue
		}
		return res, err
	}
}

func (c *mcpClient) initialize(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready {
		return nil
	}
	res, err := c.request(ctx, "initialize", map[string]any{
		"protocolVersion": mcpProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "toolsvc", "version": "1"},
	}, nil)
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
	if h, ok := c.t.(*httpTransport); ok {
		h.setProtocol(init.ProtocolVersion)
	}
	if _, err := c.t.roundTrip(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), 0, nil); err != nil {
		return err
	}
	c.ready = true
	return nil
}

func (c *mcpClient) request(ctx context.Context, method string, params any, hdr http.Header) (json.RawMessage, error) {
	id := c.next.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	msg, err := c.t.roundTrip(ctx, body, id, hdr)
	if err != nil {
		return nil, err
	}
	if re, err := msg.ReadError(); err != nil {
		return nil, fmt.Errorf("%w: %w", errMalformedMessage, err)
	} else if re != nil {
		return nil, re
	}
	if len(msg.Result) == 0 || msg.Result[0] != '{' {
		return nil, fmt.Errorf("%w: the answer to %s has no result object", errMalformedMessage, method)
	}
	return msg.Result, nil
}

func (c *mcpClient) close() { c.t.close() }

// decodeMessage reads one JSON-RPC message from the server with the
// strict core the bridge reads its clients' requests with
// (internal/lib/jsonrpc, jsonrpc.Answer: duplicate and case-variant keys,
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
	url      string
	token    string
	limit    int64 // the largest message read (mcp.max_response_bytes)
	client   *http.Client
	onNotify func(string)

	mu        sync.Mutex
	session   string
	protocol  string
	listening bool
	stop      chan struct{}
	closed    bool
}

// setProtocol records the negotiated revision and, once, starts listening
// for the server's notifications.
func (t *httpTransport) setProtocol(v string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.protocol = v
	if !t.listening && !t.closed && t.onNotify != nil {
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
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if protocol != "" {
		req.Header.Set("MCP-Protocol-Version", protocol)
	}
	return session
}

func (t *httpTransport) reset() {
	t.mu.Lock()
	t.session, t.protocol = "", ""
	t.mu.Unlock()
}

func (t *httpTransport) roundTrip(ctx context.Context, body []byte, id int64, hdr http.Header) (*jsonrpc.Message, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
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
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%w: HTTP %d", errCredentialRefused, resp.StatusCode)
	case resp.StatusCode == http.StatusNotFound && session != "":
		return nil, errSessionGone
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, fmt.Errorf("%w: HTTP %d", errUnreachable, resp.StatusCode)
	case resp.StatusCode >= 300:
		return nil, fmt.Errorf("%w: HTTP %d", errMalformedMessage, resp.StatusCode)
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" && session == "" {
		t.mu.Lock()
		t.session = s
		t.mu.Unlock()
	}
	if id == 0 {
		return nil, nil // a notification: 202 Accepted, no body
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		return t.readEvents(ctx, resp.Body, id)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, t.limit+1))
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
// on the way go to onNotify; requests of the server are not answered
// (toolsvc declared no capability a server could ask of it).
func (t *httpTransport) readEvents(ctx context.Context, r io.Reader, id int64) (*jsonrpc.Message, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), int(t.limit))
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) == 0 {
				continue
			}
			msg, err := decodeMessage(data)
			data = data[:0]
			if err != nil {
				return nil, err
			}
			if isResponse(msg, id) {
				return msg, nil
			}
			if msg.Method != "" && len(msg.ID) == 0 && t.onNotify != nil {
				t.onNotify(msg.Method)
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, tooLarge(t.limit)
		}
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
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("MCP-Protocol-Version", protocol)
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
	limit    int64 // the largest message read (mcp.max_response_bytes)
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	onNotify func(string)

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

func startStdio(cfg Config, logger *slog.Logger, onNotify func(string)) (*stdioTransport, error) {
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
	t := &stdioTransport{limit: cfg.MCP.maxResponse(), cmd: cmd, stdin: stdin, onNotify: onNotify, pending: map[int64]chan *jsonrpc.Message{}, done: make(chan struct{})}
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
			if t.onNotify != nil {
				t.onNotify(msg.Method)
			}
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
		t.forget(id)
		// Tell the server to stop working on it.
		cancel := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`+"\n", id)
		t.wmu.Lock()
		_, _ = t.stdin.Write(cancel)
		t.wmu.Unlock()
		return nil, ctx.Err()
	}
}

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
