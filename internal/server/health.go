package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/base/version"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
)

// Permissions of what only operators read. Tools declare theirs in their
// contracts; these guard the HTTP routes that show the deployment. An auth
// file grants them like any other ("health:read", "metrics:read",
// "health:*", or "*"), and start-up does not warn that they match no tool.
const (
	// PermissionHealthRead reads the operator view of health:
	// GET /healthz?view=operator.
	PermissionHealthRead = "health:read"
	// PermissionMetricsRead reads /metrics on the main HTTP listener (the
	// --metrics-addr listener needs none: the operator binds it privately).
	PermissionMetricsRead = "metrics:read"
)

// operatorPermissions are the permissions no tool declares that an auth
// file may still grant.
var operatorPermissions = []string{PermissionHealthRead, PermissionMetricsRead, PermissionPolicyRead}

// HealthOperatorView is the value of /healthz's view parameter that asks
// for the operator view.
const HealthOperatorView = "operator"

// serveHealth is GET /healthz. Anonymously it answers what a probe or a
// load balancer needs and nothing else: {"status":"ok"}. Who may read more
// asks for ?view=operator with a credential holding health:read (in
// development mode, with no auth file, the anonymous principal holds every
// permission): the version, the tools, the MCP list cache and the traffic
// figures (the /healthz operator view, docs/OPERATIONS.md), the audit store's state and every
// upstream with what it serves and refuses.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	switch view := r.URL.Query().Get("view"); view {
	case "":
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
		return
	case HealthOperatorView:
	default:
		writeToolError(w, toolerr.Invalid("view", "in", "view %q: want no view (the probe's answer) or view=operator", view))
		return
	}
	if s.operator(w, r, PermissionHealthRead, "GET /healthz?view=operator", true) == nil {
		return
	}
	writeJSON(w, http.StatusOK, s.operatorHealth(r.Context()))
}

// operatorHealth is the operator view of /healthz.
func (s *Server) operatorHealth(ctx context.Context) map[string]any {
	reg := s.Registry()
	body := map[string]any{"status": "ok", "version": version.Version, "tools": reg.Len(), "mcp": s.mcpHealth(),
		"observability": s.chainMetrics.Summary(), "audit": map[string]any{"failing": s.auditor.Failing()}}
	if ups := s.upstreams.Load(); ups != nil {
		body["upstreams"] = ups.Health(reg)
	}
	if s.authReloads != nil {
		body["auth"] = s.authReloads.snapshot()
	}
	if s.budgets != nil {
		if all, err := s.budgets.All(ctx); err != nil {
			body["budgets"] = map[string]any{"error": "budget store unavailable"}
		} else if all != nil {
			body["budgets"] = all
		}
	}
	return body
}

// serveReady is GET /readyz: 200 while the store answers, 503 otherwise.
// It says which dependency failed, not how.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "draining", "reason": "shutting down"})
		return
	}
	if err := s.readiness(ctx); err != nil {
		s.logger.Warn("not ready", slog.String("error", err.Error()))
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "reason": "store unreachable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
}

// serveOptions answers OPTIONS / (what HAProxy's `option httpchk` sends
// when given no request) with the methods of the service's routes: a
// balancer's default check passes without configuration. It is liveness
// only, like the anonymous /healthz.
func serveOptions(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Allow", "GET, HEAD, POST, DELETE, OPTIONS")
	w.WriteHeader(http.StatusNoContent)
}

// isProbe reports whether r is one of the routes probes and balancers
// read: they tell an anonymous caller nothing about the deployment, so
// they pass the DNS-rebinding guard whatever Host they bring (HTTP/1.0
// probes send none, Kubernetes and HAProxy often send an address). The
// operator view of /healthz is not a probe.
func isProbe(r *http.Request) bool {
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch r.URL.Path {
	case "/healthz":
		return get && !r.URL.Query().Has("view")
	case "/readyz", "/api/mcp/health", jwksPath, openIDConfigPath:
		return get
	case "/":
		return r.Method == http.MethodOptions
	}
	return false
}

// operator authenticates r with the chain's Authenticator (a bearer API key
// or JWT, or the client certificate of mutual TLS) and checks that the
// principal holds permission. It answers 401 or 403 itself and returns nil
// when the caller may not read the route. A failed authentication is
// counted and logged like the chain's; a decision about an authenticated
// principal is audited like a tool call's (route names the route in the
// audit record), the allowed ones only when auditAllowed (a scrape every
// few seconds would fill the audit store).
func (s *Server) operator(w http.ResponseWriter, r *http.Request, permission, route string, auditAllowed bool) *auth.Principal {
	start := time.Now()
	p, err := s.auth.AuthenticatePeer(r.Context(), r.Header.Get("Authorization"), r.TLS)
	if err != nil {
		s.authFailures.Record("http", err)
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolsvc"`)
		writeToolError(w, toolerr.New(toolerr.Unauthorized, "authentication required: this route needs a credential holding %s", permission))
		return nil
	}
	allowed := p.Allows(permission)
	if allowed && !auditAllowed {
		return p
	}
	e := &store.AuditEvent{At: start.UTC(), Tool: route, Subject: p.Subject, Tenant: p.Tenant, Transport: "http",
		Decision: "allow", Code: "OK"}
	if !allowed {
		e.Decision, e.Reason, e.Code = "deny", "permission: missing "+permission, string(toolerr.Forbidden)
	}
	e.LatencyMs = float64(time.Since(start).Microseconds()) / 1000
	_ = s.auditor.Record(e) // a full queue is counted and logged by the auditor
	if !allowed {
		writeToolError(w, toolerr.New(toolerr.Forbidden, "permission denied: this route needs %s", permission))
		return nil
	}
	return p
}

// writeToolError writes e as the ToolError JSON the other HTTP errors of
// the service use, with e's HTTP status.
func writeToolError(w http.ResponseWriter, e *toolerr.Error) {
	body, _ := protojson.Marshal(e.ToolError(""))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Code.HTTPStatus())
	_, _ = w.Write(body)
}
