// Package deploysrv is the example upstream MCP server of
// examples/upstreams: deployments of services to environments, with a
// query (list-deployments) and a mutation (create-deployment), each with
// its inputSchema and outputSchema. It is built with mark3labs/mcp-go, not
// toolsvc's code: toolsvc is its MCP client. Deployments are kept per
// tenant, the tenant of toolsvc's signed assertion in each call's _meta
// (verified against toolsvc's JWKS: identity.go), or of its plain _meta
// keys for a toolsvc that sends them.
package deploysrv

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Options change the server's behaviour, for toolsvc's failure tests.
type Options struct {
	// Delay delays every call.
	Delay time.Duration
	// Junk makes every result break its outputSchema.
	Junk bool
	// BadTools adds tools that break the tool contract (docs/CONTRACTS.md): one without an
	// outputSchema, one with free-form parameters.
	BadTools bool
	// GrowAfter, when positive, adds the query get-deployment that long
	// after start: clients hear notifications/tools/list_changed.
	GrowAfter time.Duration
	// Verifier, when set, takes the caller from toolsvc's signed
	// assertion (_meta["toolsvc/identity"], also the X-Toolsvc-Identity
	// header over HTTP), refusing calls without a valid one or whose
	// admitting permissions lack the tool's. Without it the caller is
	// read from the plain _meta keys toolsvc/tenant and toolsvc/subject,
	// which toolsvc sends only when identity.plain_headers is on.
	Verifier *Verifier
}

// caller is who calls: from the verified assertion, or the plain _meta.
func (o Options) caller(ctx context.Context, req mcp.CallToolRequest, permission string) (tenant, subject string, refused *mcp.CallToolResult) {
	if o.Verifier == nil {
		return metaString(req, "toolsvc/tenant"), metaString(req, "toolsvc/subject"), nil
	}
	id, err := o.Verifier.Verify(ctx, metaString(req, "toolsvc/identity"))
	if err != nil {
		return "", "", mcp.NewToolResultError("no valid toolsvc identity: " + err.Error())
	}
	if !id.Allows(permission) {
		return "", "", mcp.NewToolResultError("toolsvc did not admit this call with " + permission)
	}
	return id.Tenant, id.Subject, nil
}

// Deployment is one deployment.
type Deployment struct {
	ID          string `json:"id"`
	Service     string `json:"service"`
	Version     string `json:"version"`
	Environment string `json:"environment"`
	Status      string `json:"status"`
	CreatedBy   string `json:"created_by"`
	CreatedAt   string `json:"created_at"`
}

// store keeps deployments per tenant.
type store struct {
	mu     sync.Mutex
	next   int
	byTeam map[string][]Deployment
}

const deploymentSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["id", "service", "version", "environment", "status", "created_by", "created_at"],
  "properties": {
    "id": {"type": "string", "description": "Deployment id, dep-N."},
    "service": {"type": "string", "description": "The service deployed."},
    "version": {"type": "string", "description": "The version deployed."},
    "environment": {"type": "string", "enum": ["staging", "production"]},
    "status": {"type": "string", "enum": ["pending", "succeeded", "failed"]},
    "created_by": {"type": "string", "description": "The subject that asked for the deployment."},
    "created_at": {"type": "string", "format": "date-time"}
  }
}`

var listInput = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "service": {"type": "string", "pattern": "^[a-z][a-z0-9-]{1,40}$", "description": "Only deployments of this service."},
    "environment": {"type": "string", "enum": ["staging", "production"], "description": "Only deployments to this environment."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 20, "description": "At most this many, newest first."}
  },
  "examples": [{"service": "billing", "environment": "production"}]
}`

var listOutput = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["deployments", "total"],
  "properties": {
    "deployments": {"type": "array", "items": ` + deploymentSchema + `},
    "total": {"type": "integer", "minimum": 0, "description": "How many deployments matched."}
  }
}`

var createInput = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["service", "version", "environment"],
  "properties": {
    "service": {"type": "string", "pattern": "^[a-z][a-z0-9-]{1,40}$", "description": "The service to deploy."},
    "version": {"type": "string", "pattern": "^v?[0-9]+\\.[0-9]+\\.[0-9]+$", "description": "The version to deploy, semver."},
    "environment": {"type": "string", "enum": ["staging", "production"], "description": "Where to deploy it."}
  },
  "examples": [{"service": "billing", "version": "1.4.2", "environment": "staging"}]
}`

var createOutput = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["deployment"],
  "properties": {"deployment": ` + deploymentSchema + `}
}`

// listHints are the agent hints of a list-deployments result, returned in
// the result's _meta["toolsvc/agentHints"] (the JSON of toolsvc's
// AgentHints; docs/ADDING-A-TOOL.md): toolsvc checks them and gives them
// to the agent, on every transport. The list is what this server holds, so
// it is sure of it; when more deployments match than were listed, the
// next step is a narrower or larger list.
func listHints(shown, total int) map[string]any {
	next := []any{}
	if total > shown {
		next = append(next, map[string]any{"action": "list-deployments", "priority": "medium",
			"description": fmt.Sprintf("%d of %d matching deployments are shown: raise limit or filter by environment", shown, total),
			"category":    "exploration"})
	}
	return map[string]any{
		"suggestedNextActions": next,
		"confidence":           1,
		"sourceQuality":        "high",
		"validityPeriod":       "short",
		"estimatedImpact":      map[string]any{"benefit": 0.5, "effort": 0.1, "roi": 5},
		"reasoning":            fmt.Sprintf("%d of %d matching deployments, newest first, as this server holds them.", shown, total),
	}
}

// toolsvcMeta is the tool definition toolsvc reads from _meta
// ("toolsvc/tool"), written like the (toolsvc.v1.tool) option: what MCP
// has no word for.
func toolsvcMeta(def map[string]any) *mcp.Meta {
	return &mcp.Meta{AdditionalFields: map[string]any{"toolsvc/tool": def}}
}

// New returns the MCP server.
func New(o Options) *server.MCPServer {
	s := server.NewMCPServer("deploys", "1.0.0", server.WithToolCapabilities(true))
	st := &store{byTeam: map[string][]Deployment{}}
	yes, no := true, false

	list := mcp.NewToolWithRawSchema("list-deployments",
		"Lists the deployments of the caller's tenant, newest first. Use it to see what runs where before deploying; it returns the deployments and how many matched.",
		json.RawMessage(listInput))
	list.RawOutputSchema = json.RawMessage(listOutput)
	list.Title = "List deployments"
	list.Annotations = mcp.ToolAnnotation{Title: "List deployments", ReadOnlyHint: &yes, OpenWorldHint: &no}
	list.Meta = toolsvcMeta(map[string]any{
		"permissions": []string{"deploys:read"}, "tags": []string{"deployments", "mcp"}, "responseTime": "fast",
	})
	s.AddTool(list, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := wait(ctx, o.Delay); err != nil {
			return nil, err
		}
		tenant, _, refused := o.caller(ctx, req, "deploys:read")
		if refused != nil {
			return refused, nil
		}
		var args struct {
			Service     string `json:"service"`
			Environment string `json:"environment"`
			Limit       int    `json:"limit"`
		}
		if err := req.BindArguments(&args); err != nil {
			return mcp.NewToolResultError("arguments: " + err.Error()), nil
		}
		if args.Limit == 0 {
			args.Limit = 20
		}
		st.mu.Lock()
		var out []Deployment
		all := st.byTeam[tenant]
		for i := len(all) - 1; i >= 0; i-- {
			d := all[i]
			if (args.Service == "" || d.Service == args.Service) && (args.Environment == "" || d.Environment == args.Environment) {
				out = append(out, d)
			}
		}
		st.mu.Unlock()
		total := len(out)
		if len(out) > args.Limit {
			out = out[:args.Limit]
		}
		if out == nil {
			out = []Deployment{}
		}
		if o.Junk {
			return mcp.NewToolResultStructuredOnly(map[string]any{"deployments": "none", "total": -1}), nil
		}
		res := mcp.NewToolResultStructuredOnly(map[string]any{"deployments": out, "total": total})
		res.Meta = &mcp.Meta{AdditionalFields: map[string]any{"toolsvc/agentHints": listHints(len(out), total)}}
		return res, nil
	})

	create := mcp.NewToolWithRawSchema("create-deployment",
		"Deploys a version of a service to staging or production for the caller's tenant. Use it once the version is built and approved; it returns the new deployment.",
		json.RawMessage(createInput))
	create.RawOutputSchema = json.RawMessage(createOutput)
	create.Title = "Create a deployment"
	create.Annotations = mcp.ToolAnnotation{Title: "Create a deployment", ReadOnlyHint: &no, DestructiveHint: &no, IdempotentHint: &no, OpenWorldHint: &yes}
	create.Meta = toolsvcMeta(map[string]any{
		"permissions": []string{"deploys:write"}, "tags": []string{"deployments", "mcp"}, "responseTime": "fast",
	})
	s.AddTool(create, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := wait(ctx, o.Delay); err != nil {
			return nil, err
		}
		tenant, subject, refused := o.caller(ctx, req, "deploys:write")
		if refused != nil {
			return refused, nil
		}
		var args struct {
			Service     string `json:"service"`
			Version     string `json:"version"`
			Environment string `json:"environment"`
		}
		if err := req.BindArguments(&args); err != nil {
			return mcp.NewToolResultError("arguments: " + err.Error()), nil
		}
		st.mu.Lock()
		st.next++
		d := Deployment{ID: fmt.Sprintf("dep-%d", st.next), Service: args.Service, Version: args.Version, Environment: args.Environment,
			Status: "pending", CreatedBy: subject, CreatedAt: time.Now().UTC().Format(time.RFC3339)}
		st.byTeam[tenant] = append(st.byTeam[tenant], d)
		st.mu.Unlock()
		if o.Junk {
			return mcp.NewToolResultStructuredOnly(map[string]any{"deployment": map[string]any{"id": 7}}), nil
		}
		return mcp.NewToolResultStructuredOnly(map[string]any{"deployment": d}), nil
	})

	if o.GrowAfter > 0 {
		get := mcp.NewToolWithRawSchema("get-deployment",
			"Returns one deployment of the caller's tenant by its id. Use it to follow a deployment after creating it; it returns the deployment.",
			json.RawMessage(`{"type":"object","additionalProperties":false,"required":["id"],"properties":{"id":{"type":"string","pattern":"^dep-[0-9]+$","description":"The deployment's id, as create-deployment returned it."}},"examples":[{"id":"dep-1"}]}`))
		get.RawOutputSchema = json.RawMessage(createOutput)
		get.Annotations = mcp.ToolAnnotation{Title: "Get a deployment", ReadOnlyHint: &yes, OpenWorldHint: &no}
		get.Meta = toolsvcMeta(map[string]any{
			"permissions": []string{"deploys:read"}, "tags": []string{"deployments", "mcp"}, "responseTime": "fast",
			"examples": []map[string]any{{"description": "A deployment that does not exist.", "paramsJson": `{"id":"dep-999999"}`,
				"expectedResultJson": `{"code":"NOT_FOUND"}`, "expectedErrorCode": "NOT_FOUND"}},
		})
		time.AfterFunc(o.GrowAfter, func() {
			s.AddTool(get, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				tenant := metaString(req, "toolsvc/tenant")
				id := req.GetString("id", "")
				st.mu.Lock()
				defer st.mu.Unlock()
				for _, d := range st.byTeam[tenant] {
					if d.ID == id {
						return mcp.NewToolResultStructuredOnly(map[string]any{"deployment": d}), nil
					}
				}
				// A ToolError written for agents: toolsvc passes its code.
				res := mcp.NewToolResultStructuredOnly(map[string]any{"code": "NOT_FOUND", "message": "no deployment " + id + " in this tenant"})
				res.IsError = true
				return res, nil
			})
		})
	}

	if o.BadTools {
		// No outputSchema: toolsvc cannot check its results, so refuses it.
		logs := mcp.NewToolWithRawSchema("tail-deployment-logs",
			"Returns the last lines of a deployment's logs as free text. It declares no output schema, which toolsvc refuses.",
			json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"id":{"type":"string"}}}`))
		s.AddTool(logs, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("..."), nil
		})
		// Free-form parameters: toolsvc refuses undocumented arguments.
		patch := mcp.NewToolWithRawSchema("patch-deployment",
			"Changes any field of a deployment given as free-form key/value pairs. Its inputSchema accepts undocumented properties.",
			json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`))
		patch.RawOutputSchema = json.RawMessage(createOutput)
		s.AddTool(patch, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("not implemented"), nil
		})
	}
	return s
}

func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// metaString reads a string of the call's _meta.
func metaString(req mcp.CallToolRequest, key string) string {
	if req.Params.Meta == nil {
		return ""
	}
	v, _ := req.Params.Meta.AdditionalFields[key].(string)
	return v
}
