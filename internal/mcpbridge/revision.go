package mcpbridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/lib/jsonrpc"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// This file holds what differs between the two eras the bridge serves;
// the dispatcher (bridge.go), the catalog (tools.go), tasks and logging ask
// the methods below and never branch on the era themselves. Streamable
// HTTP decides the era of a POST once, on entry (post), since the eras'
// HTTP rules differ (sessions and their headers against per-request
// headers checked by checkHeaders).
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
//   - admission: a modern request over a session transport (stdio) is
//     recognised by its _meta; the methods 2026-07-28 removed are unknown
//     there (admit);
//   - methods only the modern era has: subscriptions/listen and the Tasks
//     extension's tasks/* (revisionMethod), and tools/call as a task
//     (offersTasks);
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

// Headers of revision 2026-07-28 on Streamable HTTP.
const (
	HeaderMcpMethod = "Mcp-Method"
	HeaderMcpName   = "Mcp-Name"
)

// Cache hints of cacheable results (SEP-2549). Listings and reads are
// filtered by the caller's permissions, so they are private: a shared cache
// must never hand one caller's view to another. The tool list changes only
// with the catalog (and notifications/tools/list_changed says so).
const (
	ttlResources    = 10_000
	ttlDiscover     = 3_600_000
	ttlTemplates    = 3_600_000
	scopePrivate    = "private"
	scopePublic     = "public"
	resultComplete  = "complete"
	metaHeaderValue = "=?base64?"
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

// modernRequest prepares x for a modern request: its revision, and the
// facts of _meta the chain sees (client info as the default agent id and
// version, never as a grant; trace context joined to the chain's spans).
func (b *Bridge) modernRequest(x *exchange, meta modernMeta) *framing.Error {
	if meta.ProtocolVersion != Revision20260728 {
		return unsupportedVersion(meta.ProtocolVersion)
	}
	x.revision = Revision20260728
	x.modern = true
	md := x.md
	if !x.ownMD {
		md = md.Copy()
	}
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
	x.md = md
	if lvl := slices.Index(logLevels, meta.LogLevel); lvl >= 0 {
		x.logLevel = int32(lvl)
	} else {
		x.logLevel = -1 // no notifications/message without logLevel
	}
	return nil
}

// checkHeaders applies the Streamable HTTP header rules of revision
// 2026-07-28 to a modern request: MCP-Protocol-Version, Mcp-Method and
// (for tools/call and resources/read) Mcp-Name must be present and match
// the body, or the request is refused with HTTP 400 and HeaderMismatch.
// A proxy routing on the headers therefore always sees what runs.
func checkHeaders(h http.Header, m *framing.Message, revision string) *framing.Error {
	if v := h.Get(HeaderProtocolVersion); v != revision {
		return headerMismatch("MCP-Protocol-Version header " + strconv.Quote(v) + " does not match _meta protocolVersion " + strconv.Quote(revision))
	}
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
	got, ok := decodeHeaderValue(v[0])
	if _, equal := jsonrpc.StringEquals(raw, got); !ok || !equal {
		return headerMismatch("Mcp-Name header does not match the body's params." + field)
	}
	return nil
}

func headerMismatch(msg string) *framing.Error {
	return &framing.Error{Code: CodeHeaderMismatch, Message: "header mismatch: " + msg}
}

// decodeHeaderValue decodes an Mcp-Name or Mcp-Param value: plain
// visible ASCII, or the =?base64?...?= sentinel form.
func decodeHeaderValue(v string) (string, bool) {
	if inner, ok := strings.CutPrefix(v, metaHeaderValue); ok {
		inner, ok = strings.CutSuffix(inner, "?=")
		if !ok {
			return "", false
		}
		b, err := base64.StdEncoding.DecodeString(inner)
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	return v, true
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

// admit applies the era's admission rules to a request before it is
// dispatched; a non-nil error is the answer.
func (b *Bridge) admit(x *exchange, m *framing.Message) *framing.Error {
	if !x.modern {
		meta, ok := readModern(m.Params)
		if !ok {
			return nil // a 2025 request
		}
		if !meta.HasCapabilities { // as over HTTP (postModern)
			return errModernMeta
		}
		if re := b.modernRequest(x, meta); re != nil {
			return re
		}
	}
	if slices.Contains(removedInModern, m.Method) {
		return &framing.Error{Code: CodeMethodNotFound, Message: "method not found: " + m.Method + " is not part of MCP revision " + Revision20260728}
	}
	return nil
}

// revisionMethod runs the methods only the modern era has; ok is false
// for any other method (or any method of a 2025 request).
func (b *Bridge) revisionMethod(ctx context.Context, x *exchange, m *framing.Message) (result []byte, ok bool, err error) {
	if !x.modern {
		return nil, false, nil
	}
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

// offersTasks reports whether a tools/call of x may run as a task: only a
// modern request of an authenticated caller (the task's owner).
func (x *exchange) offersTasks() bool { return x.modern && x.principal != nil }

// fault is the era's form of an error answer: 2026-07-28 answers a missing
// resource with Invalid Params.
func (x *exchange) fault(re *framing.Error) *framing.Error {
	if x.modern && re.Code == CodeResourceNotFound {
		return &framing.Error{Code: CodeInvalidParams, Message: re.Message, Data: re.Data}
	}
	return re
}

// result is the era's form of a successful answer: a modern result gains
// the suffix of modernSuffix unless it is complete as rendered.
func (b *Bridge) result(x *exchange, m *framing.Message, result []byte) framing.Response {
	if x.modern && m.Method != "server/discover" && !bytes.HasPrefix(result, resultTypeFirst) {
		return framing.Result(m.ID, result, b.modernSuffix(m.Method, string(result) == "{}"))
	}
	return framing.Result(m.ID, result, nil)
}

// resultTypeFirst starts a modern result that is complete as it is
// rendered (resultType and _meta of its own: a task, a subscription's end),
// which therefore takes no suffix.
var resultTypeFirst = []byte(`{"resultType":`)

// minLogLevel is the least severity of notifications/message the client
// asked for (-1: none): a modern request's _meta logLevel, a 2025 peer's
// logging/setLevel.
func (x *exchange) minLogLevel() int32 {
	if x.modern {
		return x.logLevel
	}
	if x.peer == nil {
		return -1
	}
	return x.peer.level.Load()
}
