package e2e

import (
	"context"
	"encoding/json"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// Outcome is what a transport returned for one tool call: the ToolError
// code ("OK" on success) and the result or error as JSON.
type Outcome struct {
	Code   string
	Result map[string]any // {data, agentHints, metadata} on success
	Error  map[string]any // the ToolError on failure
}

// Transport calls a tool by name with a bearer token ("" for none) and JSON
// arguments, as a client of that transport would.
type Transport interface {
	Name() string
	Call(ctx context.Context, token, tool string, args map[string]any, headers map[string]string) (Outcome, error)
}

// GRPC calls tools through ToolService.CallTool over the network gRPC
// server (bufconn).
type GRPC struct {
	S *testserver.Server
	// Version pins every call (CallToolRequest.version); "" for none.
	Version string
}

// Name implements Transport.
func (GRPC) Name() string { return "grpc" }

// Call implements Transport.
func (g GRPC) Call(ctx context.Context, token, tool string, args map[string]any, headers map[string]string) (Outcome, error) {
	st, err := structpb.NewStruct(args)
	if err != nil {
		return Outcome{}, err
	}
	md := metadata.MD{}
	if token != "" {
		md.Set("authorization", "Bearer "+token)
	}
	for k, v := range headers {
		md.Set(k, v)
	}
	resp, err := g.S.Tools().CallTool(metadata.NewOutgoingContext(ctx, md), &toolsvcv1.CallToolRequest{Name: tool, Arguments: st, Version: g.Version})
	if err != nil {
		s, _ := status.FromError(err)
		te := toolerr.FromStatus(s)
		return Outcome{Code: te.GetCode(), Error: toJSON(te)}, nil
	}
	return Outcome{Code: "OK", Result: toJSON(resp)}, nil
}

var emit = protojson.MarshalOptions{EmitDefaultValues: true}

// toJSON renders a message as the JSON a REST or MCP client would see.
func toJSON(m proto.Message) map[string]any {
	b, err := emit.Marshal(m)
	if err != nil {
		return nil
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}
