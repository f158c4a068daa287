package baselines

import (
	"context"
	"encoding/json"
	"net/http"

	mark3mcp "github.com/mark3labs/mcp-go/mcp"
	mark3server "github.com/mark3labs/mcp-go/server"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/encoding/protojson"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/tools/knowledgesync"
)

// EchoTool is the name of the MCP baselines' echo tool.
const EchoTool = "echo"

// EchoArgs are the arguments of the echo tool.
type EchoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo back"`
}

// EchoResult is the structured result of the echo tool.
type EchoResult struct {
	Text string `json:"text"`
}

// NewGoSDK returns the official go-sdk's Streamable HTTP handler serving an
// echo tool, stateless or with sessions. Options are the SDK's defaults
// otherwise.
func NewGoSDK(stateless bool) http.Handler {
	s := sdk.NewServer(&sdk.Implementation{Name: "echo-go-sdk", Version: "1.0.0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: EchoTool, Description: "Echo the text back."},
		func(_ context.Context, _ *sdk.CallToolRequest, in EchoArgs) (*sdk.CallToolResult, EchoResult, error) {
			return nil, EchoResult(in), nil
		})
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: stateless})
}

// NewMark3 returns mark3labs/mcp-go's Streamable HTTP server serving an
// echo tool, stateless or with sessions. Options are the library's
// defaults otherwise.
func NewMark3(stateless bool) http.Handler {
	s := mark3server.NewMCPServer("echo-mark3labs", "1.0.0", mark3server.WithToolCapabilities(false))
	s.AddTool(mark3mcp.NewTool(EchoTool, mark3mcp.WithDescription("Echo the text back."), mark3mcp.WithString("text", mark3mcp.Required())),
		func(_ context.Context, req mark3mcp.CallToolRequest) (*mark3mcp.CallToolResult, error) {
			text := req.GetString("text", "")
			return mark3mcp.NewToolResultStructured(EchoResult{Text: text}, text), nil
		})
	opts := []mark3server.StreamableHTTPOption{mark3server.WithStateLess(stateless)}
	if !stateless {
		opts = append(opts, mark3server.WithStateful(true))
	}
	return mark3server.NewStreamableHTTPServer(s, opts...)
}

// NewMark3SyncStatus returns the same-work MCP baseline: mark3labs/mcp-go's
// Streamable HTTP server, with sessions and the library's defaults, serving
// one tool, get-sync-status, that runs the product's implementation
// (SyncStatusTool) as a caller of SyncStatusTenant and answers
// its protojson as structured content and as text — what toolsvc's bridge
// answers, without the chain.
func NewMark3SyncStatus(tool *knowledgesync.Service) http.Handler {
	s := mark3server.NewMCPServer("sync-status-mark3labs", "1.0.0", mark3server.WithToolCapabilities(false))
	s.AddTool(mark3mcp.NewTool(syncStatusTool, mark3mcp.WithDescription("Report the knowledge sync status.")),
		func(ctx context.Context, _ mark3mcp.CallToolRequest) (*mark3mcp.CallToolResult, error) {
			resp, err := tool.GetSyncStatus(knowledgesync.WithTenant(ctx, SyncStatusTenant), &syncv1.GetSyncStatusRequest{})
			if err != nil {
				return mark3mcp.NewToolResultError(err.Error()), nil
			}
			out, err := protojson.MarshalOptions{EmitDefaultValues: true}.Marshal(resp)
			if err != nil {
				return nil, err
			}
			return mark3mcp.NewToolResultStructured(json.RawMessage(out), string(out)), nil
		})
	return mark3server.NewStreamableHTTPServer(s, mark3server.WithStateful(true))
}

// syncStatusTool is get-sync-status's tool name, as toolsvc lists it.
const syncStatusTool = "get-sync-status"
