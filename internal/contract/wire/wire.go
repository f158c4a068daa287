// Package wire is the vocabulary transports and the chain share: the
// request headers (gRPC metadata keys) a caller may send, which of them the
// HTTP transports forward as metadata, which may reach a tool's
// ToolContext.metadata, and that metadata's keys. The transports
// (internal/mcpbridge, internal/rest) and the chain (internal/interceptors)
// both import it, so a transport needs nothing of the chain to name a
// header, and so reaches no store (docs/ARCHITECTURE.md, "Layers").
package wire

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/grpc/metadata"
)

// Request headers (gRPC metadata keys; HTTP headers of the same name are
// forwarded by the gateway and the MCP bridge).
const (
	HeaderAuthorization = "authorization"
	HeaderAgentID       = "x-agent-id"
	HeaderAgentVersion  = "x-agent-version"
	HeaderCorrelationID = "x-correlation-id"
	HeaderSessionID     = "x-session-id"
	HeaderUserID        = "x-user-id"
	HeaderOrgID         = "x-org-id"
	HeaderTeamID        = "x-team-id"
	HeaderProjectID     = "x-project-id"
	HeaderTraceparent   = "traceparent"
	// HeaderIdempotencyKey makes a call with side effects run once: a
	// repeat with the same key and arguments gets the first call's result.
	HeaderIdempotencyKey = "idempotency-key"
	// HeaderToolSet chooses the tool set the call sees (docs/OPERATIONS.md,
	// "Tool sets"); the MCP endpoint /mcp/sets/{set} sets it.
	HeaderToolSet = "x-toolsvc-tool-set"
	// HeaderClientUserAgent carries an HTTP caller's User-Agent through
	// the REST gateway and the MCP bridge (a gRPC caller's own user-agent
	// arrives as user-agent).
	HeaderClientUserAgent = "x-client-user-agent"
)

// ForwardedHeaders are the headers transports may forward as metadata; any
// other header is dropped (an allowlist, so credentials meant for a proxy or
// cookies never reach the chain).
var ForwardedHeaders = []string{
	HeaderAuthorization, HeaderAgentID, HeaderAgentVersion, HeaderCorrelationID,
	HeaderSessionID, HeaderUserID, HeaderOrgID, HeaderTeamID, HeaderProjectID, HeaderTraceparent,
	HeaderIdempotencyKey, HeaderToolSet,
}

// Keys of ToolContext.metadata (proto/toolsvc/v1/result.proto, "additional
// context"; docs/OPERATIONS.md): who the client says it is, the transport, and
// the request headers an operator allowed.
const (
	MetaClientName    = "client_name"
	MetaClientVersion = "client_version"
	MetaUserAgent     = "user_agent"
	MetaTransport     = "transport"
	MetaHeaders       = "headers"
	// MetaHeaderPrefix prefixes an allowed header's name in the flattened
	// metadata of callctx.Facts ("header.x-tenant-region"); the
	// ToolContext holds the same headers under MetaHeaders.
	MetaHeaderPrefix = "header."
)

// credentialWords mark a header name as a credential: such a header can
// never be allowed into the metadata, whatever the operator lists.
var credentialWords = []string{"authorization", "auth", "cookie", "token", "secret", "password",
	"passwd", "api-key", "apikey", "api_key", "credential", "signature", "session-key", "private"}

// IsCredentialHeader reports whether name is (or looks like) a header that
// carries a credential.
func IsCredentialHeader(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// MetadataHeaders is the operator's allowlist of request headers copied
// into every call's ToolContext.metadata (the zero value allows none). It
// is a value built once at start-up and handed to the transports and the
// chain in their Configs: no process-wide setting.
type MetadataHeaders struct {
	names []string
}

// NewMetadataHeaders checks names (lower-cased, blanks dropped): a
// credential header is refused with an error, so an operator cannot
// expose one to tools, and so is a name that is not a header name.
func NewMetadataHeaders(names []string) (MetadataHeaders, error) {
	out := make([]string, 0, len(names))
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			continue
		}
		if IsCredentialHeader(n) {
			return MetadataHeaders{}, fmt.Errorf("header %q carries credentials and cannot be passed to tools", n)
		}
		for i := 0; i < len(n); i++ {
			if c := n[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return MetadataHeaders{}, fmt.Errorf("header %q is not a valid header name", n)
			}
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return MetadataHeaders{names: out}, nil
}

// Names returns the allowed headers, lower case.
func (m MetadataHeaders) Names() []string { return m.names }

// Allowed reports whether transports should forward the header name
// (lower case) for the ToolContext's metadata.
func (m MetadataHeaders) Allowed(name string) bool {
	if name == HeaderClientUserAgent {
		return true
	}
	return slices.Contains(m.names, name) && !IsCredentialHeader(name)
}

// ToMetadata is the call metadata the HTTP transports (REST and MCP)
// send on a caller's behalf: the ForwardedHeaders, the User-Agent (as
// HeaderClientUserAgent) and the headers m allows, nothing else (no
// cookie, no proxy credential), and only values that are valid gRPC
// metadata (printable ASCII).
func (m MetadataHeaders) ToMetadata(h http.Header) metadata.MD {
	md := metadata.MD{}
	add := func(key string, vs []string) {
		if !slices.ContainsFunc(vs, notPrintableASCII) {
			md[key] = vs // the usual case: shared, not copied, per request
			return
		}
		for _, v := range vs {
			if !notPrintableASCII(v) {
				md[key] = append(md[key], v)
			}
		}
	}
	for i, k := range ForwardedHeaders {
		// By canonical name: h.Values would canonicalize (and allocate)
		// the lower-case name on every request.
		if vs := h[canonicalForwarded[i]]; len(vs) > 0 {
			add(k, vs)
		}
	}
	if ua := h["User-Agent"]; len(ua) > 0 {
		add(HeaderClientUserAgent, ua)
	}
	for _, k := range m.names {
		if vs := h.Values(k); len(vs) > 0 && !IsCredentialHeader(k) {
			add(k, vs)
		}
	}
	return md
}

// canonicalForwarded are ForwardedHeaders in the canonical form net/http
// keys a request's headers by.
var canonicalForwarded = func() []string {
	out := make([]string, len(ForwardedHeaders))
	for i, k := range ForwardedHeaders {
		out[i] = http.CanonicalHeaderKey(k)
	}
	return out
}()

func notPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return true
		}
	}
	return false
}
