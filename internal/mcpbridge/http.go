package mcpbridge

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/streamhttp"
)

// Streamable HTTP's names (internal/mcpbridge/streamhttp), for the
// bridge's callers.
const (
	HeaderSessionID       = streamhttp.HeaderSessionID
	HeaderProtocolVersion = streamhttp.HeaderProtocolVersion
	HeaderMcpMethod       = streamhttp.HeaderMcpMethod
	HeaderMcpName         = streamhttp.HeaderMcpName
	ProtectedResourcePath = streamhttp.ProtectedResourcePath
)

// ServerInfo is what a plain GET of the MCP endpoint answers (docs/MCP.md).
type ServerInfo = streamhttp.ServerInfo

// ServeHTTP serves the MCP endpoint (Streamable HTTP): POST carries
// JSON-RPC messages, GET with Accept: text/event-stream opens the
// session's server stream (any other GET answers ServerInfo), DELETE ends a
// session. Every request's Origin and Host are checked first, against DNS
// rebinding.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		b.post(w, r) // guarded there, with its media types
		return
	}
	if !b.guard.Admit(w, r) {
		return
	}
	switch r.Method {
	case http.MethodGet:
		if streamhttp.AcceptsExplicitly(r, "text/event-stream") {
			b.stream(w, r)
			return
		}
		streamhttp.JSON(w, http.StatusOK, ServerInfo{Name: b.cfg.Name, Version: b.cfg.Version, ProtocolVersion: LatestRevision,
			Message: "toolsvc MCP endpoint: POST JSON-RPC 2.0 messages here (Streamable HTTP); GET with Accept: text/event-stream opens the server stream."})
	case http.MethodDelete:
		b.deleteSession(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		streamhttp.Error(w, http.StatusMethodNotAllowed, CodeInvalidRequest, "method not allowed")
	}
}

// post handles one POSTed message or batch: the credentials, the body,
// the message read strictly, its envelope and revision admitted once
// (admit), then answered as its era answers over HTTP.
func (b *Bridge) post(w http.ResponseWriter, r *http.Request) {
	acceptJSON, acceptSSE, ok := b.guard.AdmitPost(w, r)
	if !ok {
		return
	}
	principal, ok := b.authenticate(w, r)
	if !ok {
		return
	}
	body, ok := streamhttp.ReadBody(w, r, b.cfg.MaxRequestBytes)
	if !ok {
		return
	}
	x := (&exchange{authorization: r.Header.Get("Authorization"), md: b.cfg.MetadataHeaders.ToMetadata(r.Header)}).withPrincipal(principal)
	if framing.IsArray(body) {
		if !b.unknownHeaderRevision(w, r) {
			b.postBatch(w, r, x, body)
		}
		return
	}
	m, re := framing.Parse(body)
	if re != nil {
		streamhttp.Error(w, http.StatusBadRequest, re.Code, re.Message)
		return
	}
	if re := b.admit(x, &m, r.Header); re != nil {
		// Refused at admission: a modern request, answered with its id
		// (400, or 404 for a method the revision removed).
		status := http.StatusBadRequest
		if re.Code == CodeMethodNotFound {
			status = http.StatusNotFound
		}
		streamhttp.Reply(w, status, framing.IDOrNull(m.ID), re)
		return
	}
	if _, isModern := x.rev.(*modern); isModern {
		b.postModern(w, r, x, &m, acceptSSE)
		return
	}
	if b.unknownHeaderRevision(w, r) || !b.resolvePeer(w, r, x, m.Method == "initialize") {
		return
	}
	resp, answered := b.envelope(x, &m)
	if answered && resp.Empty() { // a notification or a response
		w.WriteHeader(http.StatusAccepted)
		return
	}
	streamed := acceptSSE && (!acceptJSON || (m.Method == "tools/call" && (bytes.Contains(m.Params, []byte(`"progressToken"`)) || x.wantsLogs())))
	if streamed {
		b.respondSSE(w, x, func() framing.Response {
			if answered {
				return resp
			}
			return b.serve(r.Context(), x, &m)
		})
		return
	}
	if x.peer != nil && x.peer.id != "" {
		// Notifications of a plain JSON response go to the session's GET
		// streams, if the client opened one.
		x.notify = func(msg []byte) { x.peer.broadcast(msg) }
	}
	var lazy *streamhttp.Lazy
	if acceptSSE && m.Method == "tools/call" && x.peer != nil && x.peer.askCaps().askable() {
		// A client that can be asked gets an event stream once the tool
		// asks (ask.go), a plain JSON response otherwise.
		lazy = streamhttp.NewLazy(w)
		x.ask = lazy.Send
	}
	if !answered {
		resp = b.serve(r.Context(), x, &m)
	}
	if lazy != nil {
		if s := lazy.Opened(); s != nil {
			_ = s.Message(resp.Bytes())
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	// A known length spares chunking: a tools/list page goes out as the
	// cached bytes it is.
	h.Set("Content-Length", strconv.Itoa(resp.Size()))
	_ = resp.Send(w)
}

// unknownHeaderRevision refuses (400) a 2025-era POST whose
// MCP-Protocol-Version header names a revision the bridge does not serve,
// and reports whether it did.
func (b *Bridge) unknownHeaderRevision(w http.ResponseWriter, r *http.Request) bool {
	v := r.Header.Get(HeaderProtocolVersion)
	if v == "" || SupportedRevision(v) || v == Revision20260728 {
		return false
	}
	streamhttp.Error(w, http.StatusBadRequest, CodeInvalidRequest, "unsupported MCP-Protocol-Version "+v+": supported are "+strings.Join(revisions, ", "))
	return true
}

// postModern answers an admitted request of revision 2026-07-28: no
// session; subscriptions/listen holds its event stream open; an unknown
// method is 404.
func (b *Bridge) postModern(w http.ResponseWriter, r *http.Request, x *exchange, m *framing.Message, acceptSSE bool) {
	if m.Method == methodListen {
		b.listenHTTP(w, r, x, m)
		return
	}
	if acceptSSE && m.Method == "tools/call" && (x.wantsLogs() || bytes.Contains(m.Params, []byte(`"progressToken"`))) {
		b.respondSSE(w, x, func() framing.Response { return b.serve(r.Context(), x, m) })
		return
	}
	resp := b.serve(r.Context(), x, m)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(resp.Size()))
	w.WriteHeader(modernStatus(resp.Code()))
	_ = resp.Send(w)
}

// modernStatus is the HTTP status of a modern response with JSON-RPC
// error code (0: a result): 404 for an unknown method, 400 for the
// errors a modern client recognizes (the revision's backward
// compatibility rules), 200 for any other answer.
func modernStatus(code int) int {
	switch code {
	case CodeMethodNotFound:
		return http.StatusNotFound
	case CodeUnsupportedProtocolVersion, CodeHeaderMismatch, CodeInvalidRequest, CodeMissingClientCapability:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// resolvePeer finds the session of a request (or opens one for initialize)
// and writes the HTTP error when there is none.
func (b *Bridge) resolvePeer(w http.ResponseWriter, r *http.Request, x *exchange, initialize bool) bool {
	owner := sessionOwner(r, x.principal)
	switch {
	case b.cfg.Stateless:
		if initialize {
			x.peer = newPeer("", owner)
		}
		return true
	case initialize:
		p, err := b.openSession(r.Context(), owner)
		if err != nil {
			registryError(w)
			return false
		}
		x.peer = p
		p.principal.Store(x.principal)
		w.Header().Set(HeaderSessionID, x.peer.id)
		return true
	}
	sid := r.Header.Get(HeaderSessionID)
	if sid == "" {
		streamhttp.Error(w, http.StatusBadRequest, CodeInvalidRequest, "bad request: missing Mcp-Session-Id (send initialize first)")
		return false
	}
	p, ok, err := b.findSession(r.Context(), sid, owner)
	if err != nil {
		registryError(w)
		return false
	}
	if !ok {
		streamhttp.Error(w, http.StatusNotFound, CodeInvalidRequest, "session not found: initialize a new session")
		return false
	}
	x.peer = p
	p.principal.Store(x.principal)
	if l, ok := x.rev.(*legacy); ok && l.version == "" {
		x.rev = legacyRevision(p.negotiated()) // the session's: the header named none
	}
	return true
}

// registryError answers a request whose session the shared registry could
// not say: 503, to be retried.
func registryError(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	streamhttp.Error(w, http.StatusServiceUnavailable, CodeInternalError, "session registry unavailable: retry")
}

// respondSSE answers a request on an event stream, with the notifications
// (progress, log messages) serve produces before its response.
func (b *Bridge) respondSSE(w http.ResponseWriter, x *exchange, serve func() framing.Response) {
	stream := streamhttp.OpenEventStream(w)
	x.notify = func(msg []byte) { _ = stream.Message(msg) }
	x.ask = stream.Message
	x.notify(serve().Bytes())
}

// postBatch handles a JSON-RPC batch: allowed by revision 2025-03-26 only
// (2025-06-18 removed batching), never with initialize, bounded as batch.go
// says.
func (b *Bridge) postBatch(w http.ResponseWriter, r *http.Request, x *exchange, body []byte) {
	msgs, re := framing.ParseBatch(body, b.cfg.BatchMaxMessages)
	if re != nil {
		streamhttp.Reply(w, http.StatusBadRequest, framing.NullID, re)
		return
	}
	if len(msgs) == 0 {
		streamhttp.Error(w, http.StatusBadRequest, CodeInvalidRequest, "invalid request: empty batch")
		return
	}
	for i := range msgs {
		if msgs[i].Method == "initialize" {
			streamhttp.Error(w, http.StatusBadRequest, CodeInvalidRequest, "invalid request: initialize cannot be batched")
			return
		}
	}
	if !b.resolvePeer(w, r, x, false) {
		return
	}
	rev := r.Header.Get(HeaderProtocolVersion)
	if rev == "" && x.peer != nil {
		rev = x.peer.negotiated()
	}
	if rev != "" && rev != Revision20250326 {
		streamhttp.Error(w, http.StatusBadRequest, CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported in MCP revision "+rev)
		return
	}
	x.batch = true
	if x.peer != nil && x.peer.id != "" {
		x.notify = func(msg []byte) { x.peer.broadcast(msg) }
	}
	resps := b.answerBatch(r.Context(), x, msgs, nil)
	if len(resps) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(framing.BatchSize(resps)))
	_ = framing.WriteBatch(w, resps)
}

// stream serves a session's GET event stream: server-initiated messages
// and keep-alive comments, for at most StreamLifetime (the client then
// reconnects).
func (b *Bridge) stream(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get(HeaderProtocolVersion); v != "" && !SupportedRevision(v) {
		streamhttp.Error(w, http.StatusBadRequest, CodeInvalidRequest, "unsupported MCP-Protocol-Version "+v)
		return
	}
	if b.cfg.Stateless {
		// Without sessions the server never has anything to say unprompted.
		w.Header().Set("Allow", "POST")
		streamhttp.Error(w, http.StatusMethodNotAllowed, CodeInvalidRequest, "stateless server: no server stream")
		return
	}
	principal, ok := b.authenticate(w, r)
	if !ok {
		return
	}
	x := &exchange{principal: principal}
	if !b.resolvePeer(w, r, x, false) {
		return
	}
	ch, ok := x.peer.openStream()
	if !ok {
		streamhttp.Error(w, http.StatusNotFound, CodeInvalidRequest, "session not found")
		return
	}
	defer x.peer.closeStream(ch)
	stream := streamhttp.OpenEventStream(w)
	_ = stream.Comment("stream open")
	keepAlive := time.NewTicker(b.cfg.KeepAlive)
	defer keepAlive.Stop()
	lifetime := time.NewTimer(b.cfg.StreamLifetime)
	defer lifetime.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-b.stop:
			return
		case <-b.draining:
			return // shutdown: the client reconnects elsewhere
		case <-lifetime.C:
			return
		case <-keepAlive.C:
			if stream.Comment("keep-alive") != nil {
				return
			}
		case msg, open := <-ch:
			if !open || stream.Message(msg) != nil {
				return
			}
		}
	}
}

// deleteSession ends a session at the client's request.
func (b *Bridge) deleteSession(w http.ResponseWriter, r *http.Request) {
	if b.cfg.Stateless {
		w.Header().Set("Allow", "GET, POST")
		streamhttp.Error(w, http.StatusMethodNotAllowed, CodeInvalidRequest, "stateless server: no sessions to end")
		return
	}
	principal, ok := b.authenticate(w, r)
	if !ok {
		return
	}
	sid := r.Header.Get(HeaderSessionID)
	if sid == "" {
		streamhttp.Error(w, http.StatusBadRequest, CodeInvalidRequest, "bad request: missing Mcp-Session-Id")
		return
	}
	ended, err := b.endSession(r.Context(), sid, sessionOwner(r, principal))
	if err != nil {
		registryError(w)
		return
	}
	if !ended {
		streamhttp.Error(w, http.StatusNotFound, CodeInvalidRequest, "session not found")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// SetPattern is the ServeMux pattern of the tool sets' MCP endpoints
// (docs/OPERATIONS.md, "Tool sets").
const SetPattern = "/mcp/sets/{set}"

// ServeToolSet serves the MCP endpoint of one tool set, the {set} of
// [SetPattern]: the same protocol as ServeHTTP, every call of it made
// with the x-toolsvc-tool-set header naming the set (whatever the client
// sent), so that the chain lists and calls that set's tools only. A set
// the policy does not define is 404 before anything else; a set the
// caller's credential may not use is refused by the chain like any other.
// Sessions opened here belong to the set: the same Mcp-Session-Id on
// another endpoint is not found.
func (b *Bridge) ServeToolSet(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("set")
	if _, ok := b.cfg.Auth.ToolSet(name); !ok {
		streamhttp.Error(w, http.StatusNotFound, CodeInvalidRequest, "no tool set here: /mcp/sets/{set} names a set of the auth file")
		return
	}
	r = r.Clone(r.Context())
	r.Header.Set(wire.HeaderToolSet, name)
	b.ServeHTTP(w, r)
}

// sessionOwner is whom a session belongs to: the principal, and the tool
// set it was opened for, so that a session of one set's endpoint cannot be
// used on another's (or on /mcp) to see more.
func sessionOwner(r *http.Request, p *auth.Principal) string {
	if set := r.Header.Get(wire.HeaderToolSet); set != "" {
		return principalKey(p) + "\x00set=" + set
	}
	return principalKey(p)
}

// authenticate checks the caller's credentials with the server's
// authenticator; a refusal is a 401 naming the protected resource metadata
// (MCP authorization), so that OAuth-capable clients can find the
// authorization server. Without a bearer credential, a client certificate
// verified by mutual TLS stands for its principal. In development mode
// everyone is the anonymous principal.
func (b *Bridge) authenticate(w http.ResponseWriter, r *http.Request) (*auth.Principal, bool) {
	authz := r.Header.Get("Authorization")
	p, err := b.cfg.Auth.AuthenticatePeer(r.Context(), authz, r.TLS)
	if err == nil {
		return p, true
	}
	if b.cfg.AuthFailed != nil {
		b.cfg.AuthFailed(err)
	}
	challenge := `Bearer resource_metadata="` + b.publicURL(r) + ProtectedResourcePath + `"`
	if authz != "" {
		challenge += `, error="invalid_token"`
		var ae *auth.Error
		if errors.As(err, &ae) {
			challenge += `, error_description="` + ae.Reason.String() + `"`
		}
	}
	w.Header().Set("WWW-Authenticate", challenge)
	streamhttp.Error(w, http.StatusUnauthorized, CodeUnauthorized, "unauthorized: missing or invalid credentials")
	return nil, false
}

// withPrincipal sets the caller the bridge authenticated (nil: refused;
// the chain then authenticates, and reports the failure).
func (x *exchange) withPrincipal(p *auth.Principal) *exchange {
	x.principal = p
	if p != nil {
		x.caller = callctx.Facts{Transport: callctx.TransportMCP, Principal: p}
	}
	return x
}

// publicURL is the external base URL: configured, or from the request.
func (b *Bridge) publicURL(r *http.Request) string {
	if b.cfg.PublicURL != "" {
		return strings.TrimRight(b.cfg.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// ProtectedResourceMetadata serves the OAuth 2.0 protected resource
// metadata (RFC 9728) of the MCP endpoint: the resource, the configured
// authorization servers and that bearer tokens go in the header only.
func (b *Bridge) ProtectedResourceMetadata() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		servers := b.cfg.AuthorizationServers
		if servers == nil {
			servers = []string{}
		}
		w.Header().Set("Cache-Control", "max-age=3600")
		streamhttp.JSON(w, http.StatusOK, map[string]any{
			"resource":                 b.publicURL(r) + "/mcp",
			"authorization_servers":    servers,
			"bearer_methods_supported": []string{"header"},
			"resource_name":            b.cfg.Name,
		})
	})
}
