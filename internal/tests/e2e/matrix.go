package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// Matrix cases: every tool × these credentials.
const (
	CaseNoToken           = "no token"
	CaseBadToken          = "bad token"
	CaseExpiredJWT        = "expired JWT"
	CaseWrongTenant       = "wrong tenant"
	CaseMissingPermission = "missing permission"
	CaseReadOnly          = "read-only principal"
	CaseValid             = "valid API key"
	CaseValidJWT          = "valid JWT"
)

// MatrixTool is a tool with valid arguments and whether it has side effects.
type MatrixTool struct {
	Name       string
	Args       func(memoryID string) map[string]any
	SideEffect bool
	// NeedsMemory: the call needs an existing memory of tenant acme.
	NeedsMemory bool
	// AcmeKnowledge: the call names a knowledge item of tenant acme, which
	// another tenant does not see.
	AcmeKnowledge bool
}

// MatrixTools are the built-in tools with valid arguments.
var MatrixTools = []MatrixTool{
	{Name: "add-memory", SideEffect: true, Args: func(string) map[string]any {
		return map[string]any{"content": "The matrix test prefers PostgreSQL for relational data", "layer": "user"}
	}},
	{Name: "search-memories", Args: func(string) map[string]any { return map[string]any{"query": "matrix relational data"} }},
	{Name: "delete-memory", SideEffect: true, NeedsMemory: true, Args: func(id string) map[string]any { return map[string]any{"memoryId": id} }},
	{Name: "summarize-memories", Args: func(string) map[string]any { return map[string]any{"query": "matrix relational data"} }},
	{Name: "query-knowledge", Args: func(string) map[string]any { return map[string]any{"query": "database selection"} }},
	{Name: "show-knowledge", AcmeKnowledge: true, Args: func(string) map[string]any { return map[string]any{"id": "adr-042-database-selection"} }},
	{Name: "check-knowledge", Args: func(string) map[string]any {
		return map[string]any{"dependencies": []any{map[string]any{"name": "pgx"}}}
	}},
	{Name: "sync-knowledge", SideEffect: true, Args: func(string) map[string]any { return map[string]any{} }},
	{Name: "get-sync-status", Args: func(string) map[string]any { return map[string]any{} }},
	{Name: "list-audit-events", Args: func(string) map[string]any { return map[string]any{} }},
}

// Expected is the code a matrix case must produce for a tool, on every
// transport.
func Expected(tc string, tool MatrixTool) string {
	switch tc {
	case CaseNoToken, CaseBadToken, CaseExpiredJWT:
		return "UNAUTHORIZED"
	case CaseMissingPermission:
		// A tool one may not call is one one may not see.
		return "NOT_FOUND"
	case CaseReadOnly:
		if tool.SideEffect {
			return "FORBIDDEN"
		}
		return "OK"
	case CaseWrongTenant:
		if tool.NeedsMemory || tool.AcmeKnowledge {
			// Another tenant's memory or knowledge item does not exist
			// for this caller.
			return "NOT_FOUND"
		}
		return "OK"
	default:
		return "OK"
	}
}

// Token returns the credential of a matrix case.
func Token(c *testserver.Credentials, tc string) string {
	switch tc {
	case CaseNoToken:
		return ""
	case CaseBadToken:
		return c.Bad
	case CaseExpiredJWT:
		return c.ExpiredJWT
	case CaseWrongTenant:
		return c.OtherTenant
	case CaseMissingPermission:
		return c.NoPermission
	case CaseReadOnly:
		return c.ReadOnly
	case CaseValidJWT:
		return c.JWT
	default:
		return c.Full
	}
}

// Cases lists the matrix cases in order.
var Cases = []string{CaseNoToken, CaseBadToken, CaseExpiredJWT, CaseWrongTenant, CaseMissingPermission, CaseReadOnly, CaseValid, CaseValidJWT}

// RunMatrix runs every tool × case over every transport against s (which
// must use c's auth file) and checks the expected code. newMemory creates
// a memory of tenant acme and returns its id (delete-memory needs one).
func RunMatrix(t *testing.T, c *testserver.Credentials, newMemory func(t *testing.T) string, transports ...Transport) {
	t.Helper()
	RunMatrixTools(t, c, MatrixTools, newMemory, transports...)
}

// RunMatrixTools is RunMatrix over tools (upstream tools):
// newMemory makes the resource of the tools that NeedsMemory.
func RunMatrixTools(t *testing.T, c *testserver.Credentials, tools []MatrixTool, newMemory func(t *testing.T) string, transports ...Transport) {
	t.Helper()
	for _, tr := range transports {
		for _, tool := range tools {
			for _, tc := range Cases {
				t.Run(tr.Name()+"/"+tool.Name+"/"+tc, func(t *testing.T) {
					id := "mem_00000000000000000000000000000000"
					if tool.NeedsMemory {
						id = newMemory(t)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					out, err := tr.Call(ctx, Token(c, tc), tool.Name, tool.Args(id), nil)
					if err != nil {
						t.Fatalf("transport error: %v", err)
					}
					if want := Expected(tc, tool); out.Code != want {
						t.Fatalf("code = %s, want %s (error %v)", out.Code, want, out.Error)
					}
					if out.Code != "OK" {
						if out.Error["message"] == "" || out.Error["kind"] == "" {
							t.Fatalf("error without message or kind: %v", out.Error)
						}
						return
					}
					for _, k := range []string{"data", "agentHints", "metadata"} {
						if out.Result[k] == nil {
							t.Fatalf("result has no %s: %v", k, out.Result)
						}
					}
				})
			}
		}
	}
}
