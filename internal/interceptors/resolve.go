package interceptors

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/base/traceparent"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

const (
	toolServicePrefix = "/toolsvc.v1.ToolService/"
	callToolMethod    = toolServicePrefix + "CallTool"
)

// resolve is the first step after the boundary: it finds the tool being
// called (for CallTool, by name, decoding the JSON arguments into the
// tool's typed request).
//
// The call resolves in the registry's current snapshot and keeps what it
// found: tools that appear or disappear meanwhile change later calls only.
// A method that is neither a tool of the snapshot nor ToolService's is a
// tool that is no longer served (an upstream's, removed at run time, whose
// handler the in-process channel still holds): NOT_FOUND, never a call
// that skips the policy.
func resolve(snapshots registry.Snapshots) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := callFrom(ctx)
		c.FullMethod = info.FullMethod
		reg := snapshots.Load()
		if t, ok := reg.ByMethod(info.FullMethod); ok {
			c.Tool = t
			c.Request, _ = req.(proto.Message)
		} else if !strings.HasPrefix(info.FullMethod, toolServicePrefix) {
			c.pending, c.unknownTool = toolerr.New(toolerr.NotFound, "method %s is not a tool served now", info.FullMethod), info.FullMethod
		} else if info.FullMethod == callToolMethod {
			ct, _ := req.(*toolsvcv1.CallToolRequest)
			// Errors wait until the caller is authenticated (policy returns
			// them), so an anonymous caller learns nothing about the tools.
			t, err := reg.Get(ct.GetName(), ct.GetVersion())
			if err != nil {
				c.pending, c.unknownTool = err, ct.GetName()
				return next(ctx, req)
			}
			typed, err := DecodeArguments(t, ct.GetArguments())
			if err != nil {
				c.pending = err
			}
			c.Tool, c.Request, c.Generic = t, typed, true
		}
		return next(ctx, req)
	}
}

// DecodeArguments turns JSON arguments into the tool's typed request with
// strict protojson (unknown fields and wrong types are INVALID_INPUT).
func DecodeArguments(t *registry.Tool, args *structpb.Struct) (proto.Message, error) {
	msg := t.Input.New().Interface()
	if args == nil || len(args.GetFields()) == 0 {
		return msg, nil
	}
	raw, err := protojson.Marshal(args)
	if err != nil {
		return nil, toolerr.Wrap(err, toolerr.InvalidInput, "arguments are not a JSON object")
	}
	if err := strictJSON.Unmarshal(raw, msg); err != nil {
		return nil, toolerr.Invalid("arguments", "json.decode", "%s", toolerr.DecodeReason(err.Error()))
	}
	return msg, nil
}

// newCall starts the call of a request and the facts the request states:
// transport, start time, trace and correlation ids (generated when
// absent), the agent's version and the metadata a tool may see.
func newCall(ctx context.Context, allowed wire.MetadataHeaders) *call {
	md, _ := metadata.FromIncomingContext(ctx)
	c := &call{md: md}
	f := &c.Facts
	f.Start = time.Now()
	f.Transport = callctx.TransportOf(ctx)
	f.CorrelationID = header(md, wire.HeaderCorrelationID, 128)
	if f.CorrelationID == "" {
		f.CorrelationID = newCorrelationID()
	}
	f.TraceID = traceparent.TraceIDOrNew(header(md, wire.HeaderTraceparent, traceparent.Len))
	f.AgentVersion = header(md, wire.HeaderAgentVersion, 64)
	f.Metadata = callMetadata(md, allowed, f.Transport, header(md, wire.HeaderAgentID, 128), f.AgentVersion)
	return c
}

// header returns the first value of key if it is printable ASCII of at most
// max bytes; anything else is ignored rather than trusted.
func header(md metadata.MD, key string, max int) string {
	vs := md.Get(key)
	if len(vs) == 0 {
		return ""
	}
	v := strings.TrimSpace(vs[0])
	if len(v) > max {
		return ""
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return ""
		}
	}
	return v
}

// newCorrelationID is a random (version 4) UUID.
func newCorrelationID() string {
	b := traceparent.RandomID()
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return uuid.UUID(b).String()
}

var strictJSON = protojson.UnmarshalOptions{DiscardUnknown: false}
