package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/streamhttp"
)

// This file holds what differs between the two eras the bridge serves,
// and the one place a request's era is chosen: admit, which Streamable HTTP
// (http.go) and stdio (stdio.go, through answer) call once per request.
// admit leaves the chosen revision in the exchange, a value of the
// revision interface below (legacy for the 2025 revisions, modern for
// 2026-07-28); the dispatcher (dispatch.go), the catalog (tools.go), tasks
// and logging ask that value and never branch on the era themselves.
//
// Revision 2026-07-28 (the "modern" era) has no initialize handshake and
// no sessions: every request names its revision, client and capabilities
// in _meta, and the server answers each one on its own. The bridge serves
// it beside the 2025 revisions on the same endpoint and on stdio, deciding
// the era per request: a request whose _meta names a protocol version (or,
// over HTTP, whose MCP-Protocol-Version header is a modern revision) is
// modern; anything else is served exactly as before.
//
// The differences, in the order a request meets them:
//   - admission (admit): the era; for a modern request its _meta, its
//     revision, over HTTP its headers against the body (one check each),
//     and the methods 2026-07-28 removed, which are unknown there;
//   - methods only the modern era has: subscriptions/listen and the Tasks
//     extension's tasks/* (revision.method), and tools/call as a task or
//     asking its client through its result (perRequest);
//   - errors: a missing resource is Invalid Params (fault);
//   - results: resultType, cache hints and the server's identity
//     (result, modernSuffix);
//   - logging: the level of the request's _meta, not the session's
//     logging/setLevel (minLogLevel).

// Revision20260728 is the modern revision the bridge serves.
const Revision20260728 = "2026-07-28"

// Error codes of revision 2026-07-28 (the range -32020..-32099 the
// specification reserves).
const (
	// CodeHeaderMismatch: an Mcp-Method, Mcp-Name or MCP-Protocol-Version
	// header disagrees with the body, or a required one is missing.
	CodeHeaderMismatch = -32020
	// CodeMissingClientCapability: the request needs a capability the
	// client did not declare.
	CodeMissingClientCapability = -32021
	// CodeUnsupportedProtocolVersion: the request's revision is not one
	// the server serves; data lists the supported ones.
	CodeUnsupportedProtocolVersion = -32022
)

// supportedVersions are what server/discover and
// UnsupportedProtocolVersionError list, newest first.
var supportedVersions = append([]string{Revision20260728}, revisions...)

// Cache hints of cacheable results (SEP-2549). Listings and reads are
// filtered by the caller's permissions, so they are private: a shared cache
// must never hand one caller's view to another. The tool list changes only
// with the catalog (and notifications/tools/list_changed says so).
const (
	ttlResources   = 10_000
	ttlDiscover    = 3_600_000
	ttlTemplates   = 3_600_000
	scopePrivate   = "private"
	scopePublic    = "public"
	resultComplete = "complete"
)

// modernMeta is what the bridge reads of a modern request's _meta.
type modernMeta struct {
	ProtocolVersion string     `json:"io.modelcontextprotocol/protocolVersion"`
	ClientInfo      clientInfo `json:"io.modelcontextprotocol/clientInfo"`
	LogLevel        string     `json:"io.modelcontextprotocol/logLevel"`
	Traceparent     string     `json:"traceparent"`
	Tracestate      string     `json:"tracestate"`
	// HasCapabilities: _meta carries clientCapabilities, which every
	// modern request must (an empty object declares none).
	HasCapabilities bool `json:"-"`
}

// readModern reads the modern _meta of a request, if it has one: ok is
// false for a 2025-era request. The message has passed the strict reader,
// so each key is spelled exactly once; the members are read where they
// lie, with no encoding/json pass over the params (arguments included).
// A member of the wrong type makes the request not modern, as a failed
// decoding did.
func readModern(params json.RawMessage) (meta modernMeta, ok bool) {
	if !bytes.Contains(params, []byte(metaProtocolVersion)) {
		return meta, false
	}
	raw := jsonrpc.Member(params, "_meta")
	if raw == nil {
		return meta, false
	}
	ok = true
	str := func(dst *string, v []byte) {
		s, isString := jsonrpc.StringValue(v)
		*dst, ok = s, ok && isString
	}
	isObject := jsonrpc.Members(raw, func(key, v []byte) {
		switch string(key) {
		case metaProtocolVersion:
			str(&meta.ProtocolVersion, v)
		case metaLogLevel:
			str(&meta.LogLevel, v)
		case "traceparent":
			str(&meta.Traceparent, v)
		case "tracestate":
			str(&meta.Tracestate, v)
		case metaClientCapabilities:
			meta.HasCapabilities = len(v) > 0 && v[0] == '{'

		case metaClientInfo:
			if string(v) == "null" {
				return
			}
			ok = jsonrpc.Members(v, func(key, v []byte) {
				switch string(key) {
				case "name":
					str(&meta.ClientInfo.Name, v)
				case "version":
					str(&meta.ClientInfo.Version, v)
				}
			}) && ok
		}
	})
	if !isObject || !ok || meta.ProtocolVersion == "" {
		return modernMeta{}, false
	}
	return meta, true
}

// unsupportedVersion is the UnsupportedProtocolVersionError for requested.
func unsupportedVersion(requested string) *framing.Error {
	return &framing.Error{Code: CodeUnsupportedProtocolVersion, Message: "Unsupported protocol version",
		Data: map[string]any{"supported": supportedVersions, "requested": requested}}
}

// errModernMeta answers a request of revision 2026-07-28 whose _meta lacks
// its protocolVersion or clientCapabilities (SEP-2575), over HTTP and stdio.
var errModernMeta = &framing.Error{Code: CodeInvalidParams, Message: "invalid params: revision " + Revision20260728 +
	" requires params._meta with io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities"}

// modernFacts gives the calls of a modern request the facts of its _meta
// the chain sees: client info as the default agent id and version, never
// as a grant; trace context joined to the chain's spans. x.md is the
// exchange's own (each exchange's metadata is made for it).
func modernFacts(x *exchange, meta modernMeta) {
	md := x.md
	if meta.ClientInfo.Name != "" && len(md.Get(wire.HeaderAgentID)) == 0 {
		md.Set(wire.HeaderAgentID, meta.ClientInfo.Name)
		if meta.ClientInfo.Version != "" && len(md.Get(wire.HeaderAgentVersion)) == 0 {
			md.Set(wire.HeaderAgentVersion, meta.ClientInfo.Version)
		}
	}
	if meta.Traceparent != "" && len(md.Get(wire.HeaderTraceparent)) == 0 {
		md.Set(wire.HeaderTraceparent, meta.Traceparent)
		if meta.Tracestate != "" {
			md.Set("tracestate", meta.Tracestate)
		}
	}
}

// checkRouting applies the Streamable HTTP routing header rules of
// revision 2026-07-28 to a modern request (admit has checked
// MCP-Protocol-Version): Mcp-Method and (for tools/call and
// resources/read) Mcp-Name must be present and match the body, or the
// request is refused with HTTP 400 and HeaderMismatch. A proxy routing on
// the headers therefore always sees what runs.
func checkRouting(h http.Header, m *framing.Message) *framing.Error {
	if v := h.Values(HeaderMcpMethod); len(v) != 1 || v[0] != m.Method {
		return headerMismatch("Mcp-Method header does not match the body's method " + strconv.Quote(m.Method))
	}
	var field string
	switch m.Method {
	case "tools/call", "prompts/get":
		field = "name"
	case "resources/read":
		field = "uri"
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
		field = "taskId" // SEP-2663: routes a task's requests to its replica
	default:
		return nil
	}
	raw := jsonrpc.Member(m.Params, field)
	if isString, _ := jsonrpc.StringEquals(raw, ""); !isString {
		return nil // the method itself reports the missing parameter
	}
	v := h.Values(HeaderMcpName)
	if len(v) != 1 {
		return headerMismatch("Mcp-Name header is required for " + m.Method)
	}
	got, ok := streamhttp.DecodeHeaderValue(v[0])
	if _, equal := jsonrpc.StringEquals(raw, got); !ok || !equal {
		return headerMismatch("Mcp-Name header does not match the body's params." + field)
	}
	return nil
}

func headerMismatch(msg string) *framing.Error {
	return &framing.Error{Code: CodeHeaderMismatch, Message: "header mismatch: " + msg}
}

// modernSuffix is what a modern result carries besides the 2025 fields:
// resultType, the cache hints of cacheable results, and the server's
// identity in _meta. It replaces the result's closing brace. The suffixes
// are rendered once per method and shared.
func (b *Bridge) modernSuffix(method string, empty bool) []byte {
	key := suffixKey{method, empty}
	if v, ok := b.suffixes.Load(key); ok {
		return v.([]byte)
	}
	if len(method) > 64 {
		return b.renderSuffix(method, empty) // not a method the bridge serves: not kept
	}
	v, _ := b.suffixes.LoadOrStore(key, b.renderSuffix(method, empty))
	return v.([]byte)
}

type suffixKey struct {
	method string
	empty  bool
}

func (b *Bridge) renderSuffix(method string, empty bool) []byte {
	out := make([]byte, 0, 160)
	if !empty {
		out = append(out, ',')
	}
	out = append(out, `"resultType":"complete"`...)
	ttl, scope := -1, ""
	switch method {
	case "tools/list":
		ttl, scope = int(b.cfg.ListTTL.Milliseconds()), scopePrivate
	case "resources/list", "resources/read", "prompts/list":
		ttl, scope = ttlResources, scopePrivate
	case "resources/templates/list":
		// private: an upstream's templates are listed as the caller may see them
		ttl, scope = ttlTemplates, scopePrivate
	}
	if ttl >= 0 {
		out = append(out, `,"ttlMs":`...)
		out = strconv.AppendInt(out, int64(ttl), 10)
		out = append(out, `,"cacheScope":"`...)
		out = append(out, scope...)
		out = append(out, '"')
	}
	out = append(out, `,"_meta":{"`+metaServerInfo+`":`...)
	out = append(out, b.serverInfoJSON()...)
	return slices.Clip(append(out, "}}"...))
}

// serverInfoJSON is the server's Implementation object.
func (b *Bridge) serverInfoJSON() []byte {
	info, _ := json.Marshal(map[string]string{"name": b.cfg.Name, "title": "toolsvc", "version": b.cfg.Version})
	return info
}

// discover answers server/discover: the revisions served, the
// capabilities of the modern era and the server's identity. It is the
// same for every caller, hence public.
func (b *Bridge) discover() ([]byte, error) {
	return json.Marshal(map[string]any{
		"resultType":        resultComplete,
		"supportedVersions": supportedVersions,
		"capabilities": map[string]any{
			"tools":       map[string]any{"listChanged": true},
			"resources":   map[string]any{"listChanged": true, "subscribe": b.subscribable()},
			"prompts":     map[string]any{"listChanged": true},
			"completions": map[string]any{},
			"extensions":  map[string]any{extTasks: map[string]any{}},
		},
		"_meta":        map[string]any{metaServerInfo: json.RawMessage(b.serverInfoJSON())},
		"instructions": b.catalog.Load().tools.resources.instructions,
		"ttlMs":        ttlDiscover,
		"cacheScope":   scopePublic,
	})
}

// removedInModern are the 2025 methods revision 2026-07-28 removed.
var removedInModern = []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}

// errModernEnvelope answers a message of revision 2026-07-28 over HTTP
// that is not a request.
var errModernEnvelope = &framing.Error{Code: CodeInvalidRequest, Message: "invalid request: revision 2026-07-28 over HTTP takes requests only (jsonrpc 2.0, an id, a method)"}

// admit chooses the revision of one request and applies its admission
// rules: the one place where a request's era is decided and checked, for
// Streamable HTTP (h, the request's headers) and stdio (h nil). A request
// whose _meta names a protocol version, or whose MCP-Protocol-Version
// header is 2026-07-28, is modern: it must be a request (over HTTP, where
// the envelope is checked here; stdio's answer checked it before), carry
// _meta with protocolVersion and clientCapabilities (SEP-2575), name a
// revision the bridge serves, agree with the request's headers over HTTP,
// and not call a method the revision removed. Any other request is of the
// 2025 family, its revision that of the header or of the peer's
// initialize (over HTTP the session, found after admission, supplies it:
// resolvePeer). A non-nil error is the answer; x.rev is set otherwise.
func (b *Bridge) admit(x *exchange, m *framing.Message, h http.Header) *framing.Error {
	var header string // MCP-Protocol-Version; stdio has none
	if h != nil {
		header = h.Get(HeaderProtocolVersion)
	}
	meta, hasMeta := readModern(m.Params)
	if !hasMeta && header != Revision20260728 {
		v := header
		if v == "" && x.peer != nil {
			v = x.peer.negotiated()
		}
		x.rev = legacyRevision(v)
		return nil
	}
	if h != nil && (m.JSONRPC != "2.0" || m.Method == "" || !framing.ValidID(m.ID)) {
		return errModernEnvelope
	}
	if !hasMeta || !meta.HasCapabilities {
		return errModernMeta
	}
	// A header that names another revision than the body is a mismatch,
	// whichever of the two the server serves; an unknown revision named
	// in both is UnsupportedProtocolVersion; over HTTP the header is
	// required.
	if header != "" && header != meta.ProtocolVersion {
		return versionMismatch(header, meta.ProtocolVersion)
	}
	if meta.ProtocolVersion != Revision20260728 {
		return unsupportedVersion(meta.ProtocolVersion)
	}
	if h != nil {
		if header == "" {
			return versionMismatch(header, meta.ProtocolVersion)
		}
		if re := checkRouting(h, m); re != nil {
			return re
		}
	}
	modernFacts(x, meta)
	x.rev = modernRevision(slices.Index(logLevels, meta.LogLevel)) // -1: no notifications/message
	if slices.Contains(removedInModern, m.Method) {
		return &framing.Error{Code: CodeMethodNotFound, Message: "method not found: " + m.Method + " is not part of MCP revision " + Revision20260728}
	}
	return nil
}

func versionMismatch(header, body string) *framing.Error {
	return headerMismatch("MCP-Protocol-Version header " + strconv.Quote(header) + " does not match _meta protocolVersion " + strconv.Quote(body))
}

// revision is the protocol revision a request is served under, chosen once
// by admit: legacy (the 2025 revisions) or modern (2026-07-28). What the
// eras do differently past admission is asked of it.
type revision interface {
	// String is the revision's name ("" for a 2025 peer that has not
	// initialized).
	String() string
	// method runs a method only this era has; ok is false for any other.
	method(ctx context.Context, b *Bridge, x *exchange, m *framing.Message) (result []byte, ok bool, err error)
	// perRequest reports whether the request carries all its client's
	// context (the modern era): a tools/call may then run as a task (the
	// Tasks extension) and asks its client through an input_required
	// result, resumed with requestState; otherwise (a 2025 session) its
	// questions go on the call's stream (ask.go) and there are no tasks.
	perRequest() bool
	// fault is the era's form of an error answer.
	fault(re *framing.Error) *framing.Error
	// result is the era's form of a successful answer.
	result(b *Bridge, m *framing.Message, result []byte) framing.Response
	// minLogLevel is the least severity of notifications/message the
	// client asked for (-1: none).
	minLogLevel(x *exchange) int32
}

// legacy is a request of the 2025 revisions: its negotiated revision.
type legacy struct{ version string }

// legacies are the legacy values of the revisions the bridge negotiates
// and of a peer that has not initialized (""), made once: a revision is
// chosen on every request, and an interface holding a fresh value would
// allocate each time.
var legacies = func() map[string]*legacy {
	m := map[string]*legacy{"": {}}
	for _, v := range revisions {
		m[v] = &legacy{version: v}
	}
	return m
}()

// legacyRevision is the revision value of 2025 revision v.
func legacyRevision(v string) *legacy {
	if l, ok := legacies[v]; ok {
		return l
	}
	return &legacy{version: v}
}

func (v *legacy) String() string { return v.version }

func (*legacy) method(context.Context, *Bridge, *exchange, *framing.Message) ([]byte, bool, error) {
	return nil, false, nil
}

func (*legacy) perRequest() bool { return false }

func (*legacy) fault(re *framing.Error) *framing.Error { return re }

func (*legacy) result(_ *Bridge, m *framing.Message, result []byte) framing.Response {
	return framing.Result(m.ID, result, nil)
}

// minLogLevel of a 2025 request is its peer's logging/setLevel.
func (*legacy) minLogLevel(x *exchange) int32 {
	if x.peer == nil {
		return -1
	}
	return x.peer.level.Load()
}

// modern is a request of revision 2026-07-28: the log level its _meta
// asked for (-1: no notifications/message).
type modern struct{ logLevel int32 }

// moderns are the modern values of each log level, from -1, made once
// (as legacies).
var moderns = func() (m [9]modern) {
	for i := range m {
		m[i].logLevel = int32(i - 1)
	}
	return m
}()

// modernRevision is the revision value of a modern request asking for
// logLevel (an index of logLevels, -1: none).
func modernRevision(logLevel int) *modern { return &moderns[logLevel+1] }

func (*modern) String() string { return Revision20260728 }

// method runs subscriptions/listen and the Tasks extension's tasks/*.
func (*modern) method(ctx context.Context, b *Bridge, x *exchange, m *framing.Message) (result []byte, ok bool, err error) {
	switch m.Method {
	case methodListen:
		result, err = b.listen(ctx, x, m)
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
		result, err = b.taskRequest(x, m)
	default:
		return nil, false, nil
	}
	return result, true, err
}

func (*modern) perRequest() bool { return true }

// fault answers a missing resource with Invalid Params.
func (*modern) fault(re *framing.Error) *framing.Error {
	if re.Code == CodeResourceNotFound {
		return &framing.Error{Code: CodeInvalidParams, Message: re.Message, Data: re.Data}
	}
	return re
}

// result gains the suffix of modernSuffix unless it is complete as
// rendered.
func (*modern) result(b *Bridge, m *framing.Message, result []byte) framing.Response {
	if m.Method != "server/discover" && !bytes.HasPrefix(result, resultTypeFirst) {
		return framing.Result(m.ID, result, b.modernSuffix(m.Method, string(result) == "{}"))
	}
	return framing.Result(m.ID, result, nil)
}

// minLogLevel of a modern request is its _meta's logLevel.
func (v *modern) minLogLevel(*exchange) int32 { return v.logLevel }

// resultTypeFirst starts a modern result that is complete as it is
// rendered (resultType and _meta of its own: a task, a subscription's end),
// which therefore takes no suffix.
var resultTypeFirst = []byte(`{"resultType":`)

// minLogLevel is the least severity of notifications/message the client
// asked for (-1: none).
func (x *exchange) minLogLevel() int32 { return x.rev.minLogLevel(x) }

// wantsLogs reports whether the client asked for log messages at all.
func (x *exchange) wantsLogs() bool { return x.minLogLevel() >= 0 }
