package toolresult

import (
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// unknown is the agent id and version of a ToolContext whose caller named
// none.
const unknown = "unknown"

// ToolContext renders the tool contract's ToolContext
// (proto/toolsvc/v1/result.proto) from the facts of a call, the one
// record of the caller; nil facts (outside an authenticated call) render
// an empty ToolContext. The metadata's "header.<name>" entries become its
// "headers" object.
func ToolContext(f *callctx.Facts) *toolsvcv1.ToolContext {
	if f == nil {
		return &toolsvcv1.ToolContext{}
	}
	tc := &toolsvcv1.ToolContext{
		UserId:        f.ID(callctx.KeyUserID),
		SessionId:     f.ID(callctx.KeySessionID),
		CorrelationId: f.CorrelationID,
		TraceId:       f.TraceID,
		AgentId:       f.ID(callctx.KeyAgentID),
		AgentVersion:  f.AgentVersion,
		Tenant:        f.Tenant,
		Subject:       f.Subject,
		Transport:     f.Transport,
	}
	if tc.AgentId == "" {
		tc.AgentId = unknown
	}
	if tc.AgentVersion == "" {
		tc.AgentVersion = unknown
	}
	if !f.Start.IsZero() {
		tc.Timestamp = timestamppb.New(f.Start)
	}
	if len(f.Metadata) > 0 {
		fields := make(map[string]*structpb.Value, len(f.Metadata))
		var headers map[string]*structpb.Value
		for k, v := range f.Metadata {
			if h, ok := strings.CutPrefix(k, wire.MetaHeaderPrefix); ok {
				if headers == nil {
					headers = map[string]*structpb.Value{}
				}
				headers[h] = structpb.NewStringValue(v)
				continue
			}
			fields[k] = structpb.NewStringValue(v)
		}
		if headers != nil {
			fields[wire.MetaHeaders] = structpb.NewStructValue(&structpb.Struct{Fields: headers})
		}
		tc.Metadata = &structpb.Struct{Fields: fields}
	}
	return tc
}
