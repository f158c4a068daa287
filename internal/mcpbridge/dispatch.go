package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"

	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// The JSON-RPC error codes the bridge answers with (framing's, named here
// for the bridge's callers). Tool failures are never JSON-RPC errors: they
// are tool results with isError set.
const (
	CodeParseError       = framing.CodeParseError
	CodeInvalidRequest   = framing.CodeInvalidRequest
	CodeMethodNotFound   = framing.CodeMethodNotFound
	CodeInvalidParams    = framing.CodeInvalidParams
	CodeInternalError    = framing.CodeInternalError
	CodeUnauthorized     = framing.CodeUnauthorized
	CodeResourceNotFound = framing.CodeResourceNotFound
	CodeBatchAnswerFull  = framing.CodeBatchAnswerFull
)

// exchange is one incoming message's context: who sent it, over which
// peer, under which revision, and where notifications produced while
// answering it go.
type exchange struct {
	// authorization is the caller's authorization header value ("" if none).
	authorization string
	// md are the forwarded headers, as outgoing gRPC metadata, made for
	// this exchange alone (admit adds a modern request's facts in place).
	md metadata.MD
	// principal is the caller as the bridge's authenticator saw it (nil when
	// the credentials were refused: the chain then reports it).
	principal *auth.Principal
	// caller is the record of principal the chain takes instead of
	// authenticating again (toChain); set with principal (withPrincipal).
	caller callctx.Facts
	peer   *peer
	// rev is the protocol revision of the request, chosen by admit.
	rev revision
	// notify sends a notification to the client during this request; nil
	// when the response cannot carry any (a plain JSON response).
	notify func([]byte)
	// keepAlive writes a keep-alive comment on the event stream of a
	// long-lived request (subscriptions/listen over HTTP); nil otherwise.
	keepAlive func()
	// batch is set for the messages of a JSON-RPC batch.
	batch bool
	// ask sends a server-to-client request on the stream of this
	// request (a 2025-era question, ask.go); nil when its response
	// cannot carry one.
	ask func([]byte) error
	// bridge is the bridge answering a tools/call, for its questions.
	bridge *Bridge
}

// handle answers one message as one buffer; it returns nil for
// notifications and responses.
func (b *Bridge) handle(ctx context.Context, x *exchange, m *framing.Message) []byte {
	return b.answer(ctx, x, m).Bytes()
}

// answer answers one message of stdio or of a batch the whole way: its
// envelope, its admission (the revision, chosen once) and its method. The
// response is empty for notifications and responses.
func (b *Bridge) answer(ctx context.Context, x *exchange, m *framing.Message) framing.Response {
	if resp, done := b.envelope(x, m); done {
		return resp
	}
	if re := b.admit(x, m, nil); re != nil {
		return framing.ErrorResponse(m.ID, re)
	}
	return b.serve(ctx, x, m)
}

// envelope checks a message's JSON-RPC envelope, once: done is set when
// the message is answered here, an invalid one with its error, a
// notification or a response (handled here) with the empty response;
// a request passes on to admission.
func (b *Bridge) envelope(x *exchange, m *framing.Message) (_ framing.Response, done bool) {
	switch {
	case m.JSONRPC != "2.0":
		return framing.ErrorResponse(framing.IDOrNull(m.ID), &framing.Error{Code: CodeInvalidRequest, Message: `invalid request: "jsonrpc" must be "2.0"`}), true
	case m.IsResponse():
		b.answered(x, m) // the answer to a question (ask.go); any other is ignored
		return framing.Response{}, true
	case m.Method == "":
		return framing.ErrorResponse(framing.IDOrNull(m.ID), &framing.Error{Code: CodeInvalidRequest, Message: `invalid request: "method" is missing`}), true
	case m.IsNotification():
		b.notification(x, m)
		return framing.Response{}, true
	case !framing.ValidID(m.ID):
		return framing.ErrorResponse(framing.NullID, &framing.Error{Code: CodeInvalidRequest, Message: `invalid request: "id" must be a string or a number`}), true
	}
	return framing.Response{}, false
}

// serve answers an admitted request: its method, and the answer in its
// revision's form.
func (b *Bridge) serve(ctx context.Context, x *exchange, m *framing.Message) framing.Response {
	result, err := b.request(ctx, x, m)
	if errors.Is(err, errNoResponse) {
		return framing.Response{}
	}
	if err != nil {
		var re *framing.Error
		if !errors.As(err, &re) {
			b.log.ErrorContext(ctx, "mcp request failed", slog.String("method", m.Method), slog.String("error", err.Error()))
			re = &framing.Error{Code: CodeInternalError, Message: "internal error"}
		}
		return framing.ErrorResponse(m.ID, x.rev.fault(re))
	}
	return x.rev.result(b, m, result)
}

// request dispatches a request by method.
func (b *Bridge) request(ctx context.Context, x *exchange, m *framing.Message) ([]byte, error) {
	switch m.Method {
	case "initialize":
		return b.initialize(x, m.Params)
	case "server/discover":
		return b.discover()
	case "ping":
		return []byte("{}"), nil
	case "tools/list":
		return b.listTools(ctx, x, m.Params)
	case "tools/call":
		c := toolCall{perRequest: x.rev.perRequest()}
		if err := params(m.Params, &c.params); err != nil {
			return nil, err
		}
		return b.callTool(ctx, x, m, &c)
	case "resources/list":
		return b.listResources(ctx, x, m.Params)
	case "resources/templates/list":
		return b.listTemplates(ctx, x)
	case "resources/read":
		return b.readResource(ctx, x, m.Params)
	case "prompts/list":
		return b.listPrompts(ctx, x, m.Params)
	case "prompts/get":
		return b.getPrompt(ctx, x, m.Params)
	case methodSubscribe, methodUnsubscribe:
		return b.subscribe(ctx, x, m.Params, m.Method == methodUnsubscribe)
	case "completion/complete":
		return b.complete(ctx, x, m.Params)
	case "logging/setLevel":
		return b.setLevel(x, m.Params)
	}
	if result, ok, err := x.rev.method(ctx, b, x, m); ok {
		return result, err
	}
	return nil, &framing.Error{Code: CodeMethodNotFound, Message: "method not found: " + m.Method}
}

// notification handles a client notification.
func (b *Bridge) notification(x *exchange, m *framing.Message) {
	switch m.Method {
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil && framing.ValidID(p.RequestID) {
			b.cancel(x, p.RequestID)
		}
	case "notifications/initialized", "notifications/roots/list_changed", "notifications/progress":
	}
}

// params decodes request params into v; absent params decode as {}.
func params(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return framing.InvalidParams("invalid params: " + err.Error())
	}
	return nil
}

type clientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// initialize negotiates the revision and records the client's identity,
// which becomes the default agent id and version of its calls.
func (b *Bridge) initialize(x *exchange, raw json.RawMessage) ([]byte, error) {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		ClientInfo      clientInfo      `json:"clientInfo"`
		Capabilities    json.RawMessage `json:"capabilities"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	v := p.ProtocolVersion
	if !SupportedRevision(v) {
		v = LatestRevision
	}
	x.rev = legacyRevision(v)
	if x.peer != nil {
		x.peer.setClient(p.ClientInfo, v)
		caps := parseAskCaps(p.Capabilities)
		x.peer.setAskCaps(caps)
		if err := b.saveSession(x.peer, map[string]string{fieldRevision: v, fieldClientName: p.ClientInfo.Name, fieldClientVersion: p.ClientInfo.Version, fieldAsk: caps.String()}); err != nil {
			return nil, err
		}
	}
	return json.Marshal(map[string]any{
		"protocolVersion": v,
		"capabilities": map[string]any{
			"tools":       map[string]any{"listChanged": true},
			"resources":   map[string]any{"listChanged": true, "subscribe": b.subscribable()},
			"prompts":     map[string]any{"listChanged": true},
			"logging":     map[string]any{},
			"completions": map[string]any{},
		},
		"serverInfo":   map[string]any{"name": b.cfg.Name, "title": "toolsvc", "version": b.cfg.Version},
		"instructions": b.catalog.Load().tools.resources.instructions,
	})
}

// instructions begin the server's instructions of initialize and
// server/discover; each resource provider's sentence follows
// (resourceIndex.instructions).
const instructions = "toolsvc hosts agent tools with typed inputs and outputs. Call tools/list for the tools you may call; " +
	"every result's structuredContent is {data, agentHints, metadata}: read agentHints for next steps. " +
	"A result with isError carries a ToolError {code, message, fieldViolations, retryable}: fix the call or retry as it says."

// Log levels of notifications/message, in increasing severity (RFC 5424).
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

func (b *Bridge) setLevel(x *exchange, raw json.RawMessage) ([]byte, error) {
	var p struct {
		Level string `json:"level"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	lvl := slices.Index(logLevels, p.Level)
	if lvl < 0 {
		return nil, framing.InvalidParams("invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency")
	}
	if x.peer != nil {
		x.peer.level.Store(int32(lvl))
		if err := b.saveSession(x.peer, map[string]string{fieldLevel: strconv.Itoa(lvl)}); err != nil {
			return nil, err
		}
		if b.cfg.Sessions != nil && x.peer.id != "" {
			b.publish(fanLevel + " " + x.peer.id + " " + strconv.Itoa(lvl))
		}
	}
	return []byte("{}"), nil
}

// logf sends a notifications/message at level to the client if its peer
// asked for messages of that severity and the exchange can carry one.
func (b *Bridge) logf(x *exchange, level string, data map[string]any) {
	if x.notify == nil || !x.wantsLogs() {
		return
	}
	if min := x.minLogLevel(); min < 0 || int32(slices.Index(logLevels, level)) < min {
		return
	}
	x.notify(framing.EncodeNotification("notifications/message", map[string]any{"level": level, "logger": "toolsvc", "data": data}))
}

// track registers cancel under the request id so notifications/cancelled
// can end the call; the returned function unregisters it.
func (b *Bridge) track(x *exchange, id json.RawMessage, cancel context.CancelFunc) func() {
	if x.peer != nil && x.peer.id != "" {
		return x.peer.track(string(id), cancel)
	}
	key, entry := inflightKey(x, id), &cancel // a pointer: funcs are not comparable
	b.inflight.Store(key, entry)
	return func() { b.inflight.CompareAndDelete(key, entry) }
}

func (b *Bridge) cancel(x *exchange, id json.RawMessage) {
	if x.peer != nil && x.peer.id != "" {
		x.peer.cancel(string(id))
		return
	}
	if c, ok := b.inflight.LoadAndDelete(inflightKey(x, id)); ok {
		(*c.(*context.CancelFunc))()
	}
}

// inflightKey scopes a stateless request id to its principal, so one caller
// can never cancel another's call.
func inflightKey(x *exchange, id json.RawMessage) string {
	return principalKey(x.principal) + "\x00" + string(id)
}

// principalKey identifies a principal for session binding.
func principalKey(p *auth.Principal) string {
	if p == nil {
		return "-"
	}
	return p.Method + "\x00" + p.Subject + "\x00" + p.Tenant
}

// forwardedValues is the metadata of a stdio connection: its credentials.
func forwardedValues(authorization string) metadata.MD {
	md := metadata.MD{}
	if authorization != "" {
		md.Set(wire.HeaderAuthorization, authorization)
	}
	return md
}
