package server

import (
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/toolsvc/toolsvc/internal/base/loopback"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// hostGuard is the defence against DNS rebinding at the one HTTP door, for
// every route (REST, console, /openapi.json, health, metrics and MCP): a
// service listening on loopback only answers requests whose Host names a
// loopback host, the public URL's host or an allowed origin's host. A web
// page whose name was rebound to 127.0.0.1 sends its own name as Host, so
// it is refused before it can read or write anything, anonymous
// development mode included. A service listening on other interfaces is
// reached under names this one cannot know; the MCP bridge keeps its own
// Origin check there, as the MCP specification requires. The MCP endpoint
// (/mcp) does not come here (Handler): the bridge's guard checks the same
// Host rule on every listener and then the Origin, and answers a foreign
// Host with refuseForeignHost (mountMCP). The probe routes
// (isProbe: the anonymous /healthz, /readyz, /api/mcp/health, OPTIONS /)
// pass whatever Host they bring: they tell a caller nothing but "up", and
// probes send no Host (HTTP/1.0) or an address.
const errForeignHost = "forbidden: the Host header names neither a loopback host nor this service's public URL " +
	"(a defence against DNS rebinding while listening on loopback): call it as localhost or 127.0.0.1, or set --public-url"

func (s *Server) hostGuard(next http.Handler) http.Handler {
	if !loopback.Addr(s.cfg.HTTPAddr) {
		return next
	}
	known := map[string]bool{}
	for _, c := range append([]string{s.cfg.PublicURL}, s.cfg.MCP.AllowedOrigins...) {
		if u, err := url.Parse(c); err == nil && u.Host != "" {
			known[strings.ToLower(u.Host)] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopback.HostPort(r.Host) && !known[strings.ToLower(r.Host)] && !isProbe(r) {
			refuseForeignHost(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuseForeignHost is the answer to a request whose Host the guard
// refuses: 403 with a FORBIDDEN ToolError.
func refuseForeignHost(w http.ResponseWriter, _ *http.Request) {
	body, _ := protojson.Marshal(toolerr.New(toolerr.Forbidden, errForeignHost).ToolError(""))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write(body)
}
