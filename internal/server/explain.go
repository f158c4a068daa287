package server

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

// PermissionPolicyRead reads the policy's answers: GET /v1/policy/explain
// (docs/OPERATIONS.md, "Explain").
const PermissionPolicyRead = "policy:read"

// ExplainPath is the operator route of explain.
const ExplainPath = "/v1/policy/explain"

// maxExplainList bounds the comma-separated lists explain accepts.
const maxExplainList = 64

// serveExplain is GET /v1/policy/explain: "may this caller call this
// tool, and if not which rule refuses it?" and "what does this caller
// see?", answered from the live policy (roles, tool sets, budgets) by the
// rules the chain applies. The caller is chosen by its subject among the
// auth file's API keys and client certificates (every entry of that
// subject is answered for), or described as a JWT would be (tenant,
// permissions, roles), or is the operator itself when neither is given.
// tool (and version) asks about one tool; tool_set answers as a call
// made with the x-toolsvc-tool-set header (or on /mcp/sets/{set}).
func (s *Server) serveExplain(w http.ResponseWriter, r *http.Request) {
	self := s.operator(w, r, PermissionPolicyRead, "GET "+ExplainPath, true)
	if self == nil {
		return
	}
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "subject", "tenant", "permissions", "roles", "tool", "version", "tool_set":
		default:
			writeToolError(w, toolerr.Invalid(k, "known", "unknown parameter %q: want subject, tenant, permissions, roles, tool, version or tool_set", k))
			return
		}
	}
	list := func(name string) ([]string, bool) {
		v := strings.TrimSpace(q.Get(name))
		if v == "" {
			return nil, true
		}
		out := strings.Split(v, ",")
		if len(out) > maxExplainList {
			writeToolError(w, toolerr.Invalid(name, "max_items", "%s lists more than %d items", name, maxExplainList))
			return nil, false
		}
		for i := range out {
			out[i] = strings.TrimSpace(out[i])
		}
		return out, true
	}
	perms, ok := list("permissions")
	if !ok {
		return
	}
	roles, ok := list("roles")
	if !ok {
		return
	}
	a := s.auth
	subject, tenant := q.Get("subject"), q.Get("tenant")
	var reqs []interceptors.ExplainRequest
	switch {
	case tenant != "" || perms != nil || roles != nil:
		reqs = append(reqs, interceptors.ExplainRequest{Entry: "jwt", Principal: a.TokenPrincipal(subject, tenant, perms, roles)})
	case subject != "":
		for _, e := range a.EntriesOf(subject) {
			reqs = append(reqs, interceptors.ExplainRequest{Entry: e.Where, Principal: e.Principal})
		}
		if len(reqs) == 0 {
			writeToolError(w, toolerr.New(toolerr.NotFound, "no api_keys or client_certs entry has subject %q: describe a token's caller with tenant, permissions and roles instead", subject).
				WithDetails(map[string]any{"subject": subject}))
			return
		}
	default:
		reqs = append(reqs, interceptors.ExplainRequest{Entry: "self", Principal: self})
	}
	callers := make([]interceptors.Explanation, 0, len(reqs))
	for _, req := range reqs {
		req.Tool, req.Version = q.Get("tool"), q.Get("version")
		if set := q.Get("tool_set"); set != "" {
			if err := a.SelectToolSet(req.Principal, set); err != nil {
				var se *auth.ToolSetError
				if errors.As(err, &se) {
					req.SetError = se
				}
			}
		}
		callers = append(callers, interceptors.Explain(r.Context(), a, s.Registry(), s.budgetExplainer, req, time.Now()))
	}
	writeJSON(w, http.StatusOK, map[string]any{"callers": callers})
}
