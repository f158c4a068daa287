// Package streamhttp is the wire of MCP's Streamable HTTP transport: its
// headers, the Origin and Host rule against DNS rebinding, Accept
// negotiation, the body bound, JSON-RPC errors with an HTTP status, event
// streams (sse.go) and the OAuth protected resource metadata's path. It
// knows HTTP and the framing of messages, not the protocol's methods,
// sessions or revisions: the server (mcpbridge, http.go) takes each POST,
// GET and DELETE from there.
package streamhttp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/toolsvc/toolsvc/internal/base/loopback"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// Streamable HTTP headers; Mcp-Method and Mcp-Name are revision
// 2026-07-28's, naming a request's method and its tool, prompt, resource
// or task for proxies that route on them.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderMcpMethod       = "Mcp-Method"
	HeaderMcpName         = "Mcp-Name"
)

// ProtectedResourcePath is where the OAuth protected resource metadata
// (RFC 9728) is served.
const ProtectedResourcePath = "/.well-known/oauth-protected-resource"

// ServerInfo is what a plain GET of the MCP endpoint answers (docs/MCP.md).
type ServerInfo struct {
	Name            string `json:"name"`
	Version         string `json:"version"`
	ProtocolVersion string `json:"protocolVersion"`
	Message         string `json:"message,omitempty"`
}

// Guard is the DNS-rebinding defence of the MCP endpoint: a browser Origin
// must be a configured origin, or a loopback origin while the request's
// Host is loopback too; and a Host that is not loopback must be the public
// URL's host or one of the allowed origins' hosts.
type Guard struct {
	PublicURL      string
	AllowedOrigins []string
	// ForeignHost, when set, answers a request whose Host the guard
	// refuses (else a 403 JSON-RPC error, as for a foreign Origin).
	ForeignHost http.Handler
}

// Admit checks r's Host and then its Origin; on refusal it has answered
// 403 (a foreign Host as ForeignHost answers, when set) and returns false.
func (g Guard) Admit(w http.ResponseWriter, r *http.Request) bool {
	hostOK, ok := g.Check(r)
	switch {
	case ok:
		return true
	case !hostOK && g.ForeignHost != nil:
		g.ForeignHost.ServeHTTP(w, r)
	default:
		Error(w, http.StatusForbidden, framing.CodeInvalidRequest, "forbidden: Origin or Host not allowed")
	}
	return false
}

// AdmitPost is everything a POST is checked for before its credentials:
// Admit (403), then NegotiatePost (415, 406); on refusal it has answered
// and ok is false.
func (g Guard) AdmitPost(w http.ResponseWriter, r *http.Request) (acceptJSON, acceptSSE, ok bool) {
	if !g.Admit(w, r) {
		return false, false, false
	}
	return NegotiatePost(w, r)
}

// Allows reports whether r's Origin and Host pass the guard.
func (g Guard) Allows(r *http.Request) bool {
	_, ok := g.Check(r)
	return ok
}

// Check reports whether r's Host passes the guard (hostOK), and whether r
// passes it whole (ok: its Host, then its Origin).
func (g Guard) Check(r *http.Request) (hostOK, ok bool) {
	if !g.HostAllowed(r) {
		return false, false
	}
	return true, g.OriginAllowed(r)
}

// HostAllowed reports whether r's Host is loopback, the public URL's host
// or an allowed origin's host.
func (g Guard) HostAllowed(r *http.Request) bool {
	return loopback.HostPort(r.Host) || g.knownHost(r.Host)
}

// OriginAllowed reports whether r's Origin, when it has one, is an
// allowed origin, or loopback while its Host is loopback too.
func (g Guard) OriginAllowed(r *http.Request) bool {
	host := loopback.Hostname(r.Host)
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not a browser
	}
	if slices.Contains(g.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return loopback.Host(u.Hostname()) && loopback.Host(host)
}

// knownHost reports whether hostport is the public URL's host or the host
// of an allowed origin.
func (g Guard) knownHost(hostport string) bool {
	candidates := append([]string{g.PublicURL}, g.AllowedOrigins...)
	for _, c := range candidates {
		if u, err := url.Parse(c); err == nil && u.Host != "" && strings.EqualFold(u.Host, hostport) {
			return true
		}
	}
	return false
}

// NegotiatePost checks a POST's media type (application/json, else 415)
// and that its Accept admits a JSON answer or an event stream (else 406);
// on failure it has answered and ok is false.
func NegotiatePost(w http.ResponseWriter, r *http.Request) (acceptJSON, acceptSSE, ok bool) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		Error(w, http.StatusUnsupportedMediaType, framing.CodeInvalidRequest, "unsupported media type: POST application/json")
		return false, false, false
	}
	acceptJSON, acceptSSE = Accepts(r, "application/json"), Accepts(r, "text/event-stream")
	if !acceptJSON && !acceptSSE {
		Error(w, http.StatusNotAcceptable, framing.CodeInvalidRequest, "not acceptable: accept application/json and text/event-stream")
		return false, false, false
	}
	return acceptJSON, acceptSSE, true
}

// ReadBody reads r's body, at most max bytes; on failure it has answered
// (413 for a body too large, 400 otherwise) and ok is false.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64) (body []byte, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			Error(w, http.StatusRequestEntityTooLarge, framing.CodeInvalidRequest, "request body too large")
			return nil, false
		}
		Error(w, http.StatusBadRequest, framing.CodeParseError, "cannot read request body")
		return nil, false
	}
	return body, true
}

// Accepts reports whether the Accept header admits media type mt (an
// absent header or */* admits everything).
func Accepts(r *http.Request, mt string) bool {
	h := r.Header.Values("Accept")
	if len(h) == 0 {
		return mt == "application/json"
	}
	for _, v := range h {
		for _, part := range strings.Split(v, ",") {
			t, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			t = strings.TrimSpace(t)
			if strings.EqualFold(t, mt) || t == "*/*" || (strings.HasSuffix(t, "/*") && strings.HasPrefix(mt, t[:len(t)-1])) {
				return true
			}
		}
	}
	return false
}

// AcceptsExplicitly reports whether the Accept header names mt itself, so
// that a generic */* GET (a browser, curl) gets the server info, not a
// stream.
func AcceptsExplicitly(r *http.Request, mt string) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			t, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.EqualFold(strings.TrimSpace(t), mt) {
				return true
			}
		}
	}
	return false
}

// Error writes a JSON-RPC error body (id null) with an HTTP status.
func Error(w http.ResponseWriter, status, code int, msg string) {
	Reply(w, status, framing.NullID, &framing.Error{Code: code, Message: msg})
}

// Reply writes the JSON-RPC error re to the request id with an HTTP
// status.
func Reply(w http.ResponseWriter, status int, id json.RawMessage, re *framing.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(framing.EncodeError(id, re))
}

// JSON writes v as a JSON body with an HTTP status.
func JSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// DecodeHeaderValue decodes an Mcp-Name or Mcp-Param value: plain
// visible ASCII, or the =?base64?...?= sentinel form.
func DecodeHeaderValue(v string) (string, bool) {
	if inner, ok := strings.CutPrefix(v, "=?base64?"); ok {
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
