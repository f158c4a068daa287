package toolresult_test

import (
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolresult"
)

// TestToolContextRenderedFromFacts: every field of the ToolContext comes
// from the facts of the call; an agent that named itself not is
// "unknown", and the allowed headers are the metadata's "headers".
func TestToolContextRenderedFromFacts(t *testing.T) {
	start := time.Date(2026, 12, 8, 1, 2, 3, 0, time.UTC)
	f := &callctx.Facts{Tenant: "acme", Subject: "key:ci", Transport: callctx.TransportMCP, CorrelationID: "corr", TraceID: "trace",
		Start: start, Identifiers: map[string]string{callctx.KeyUserID: "u1", callctx.KeySessionID: "s1", callctx.KeyTenant: "acme"},
		Metadata: map[string]string{"transport": "mcp", "client_name": "probe", "header.x-tenant-region": "eu-west"}}
	tc := toolresult.ToolContext(f)
	if tc.GetTenant() != "acme" || tc.GetSubject() != "key:ci" || tc.GetTransport() != "mcp" || tc.GetCorrelationId() != "corr" ||
		tc.GetTraceId() != "trace" || tc.GetUserId() != "u1" || tc.GetSessionId() != "s1" || !tc.GetTimestamp().AsTime().Equal(start) {
		t.Errorf("ToolContext = %v", tc)
	}
	if tc.GetAgentId() != "unknown" || tc.GetAgentVersion() != "unknown" {
		t.Errorf("agent %q %q, want unknown for an agent that did not name itself", tc.GetAgentId(), tc.GetAgentVersion())
	}
	md := tc.GetMetadata().AsMap()
	if hs, _ := md["headers"].(map[string]any); md["transport"] != "mcp" || md["client_name"] != "probe" || len(hs) != 1 || hs["x-tenant-region"] != "eu-west" {
		t.Errorf("metadata = %v", md)
	}
	f.Identifiers[callctx.KeyAgentID], f.AgentVersion = "claude-code", "2.1"
	if tc := toolresult.ToolContext(f); tc.GetAgentId() != "claude-code" || tc.GetAgentVersion() != "2.1" {
		t.Errorf("agent %q %q, want the facts'", tc.GetAgentId(), tc.GetAgentVersion())
	}
	if tc := toolresult.ToolContext(nil); tc == nil || tc.GetTenant() != "" {
		t.Errorf("nil facts render %v, want an empty ToolContext", tc)
	}
}
