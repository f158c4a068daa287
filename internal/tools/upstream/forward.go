package upstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/base/traceparent"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// Metadata keys the upstream receives: the authenticated principal and the
// call's trace, as explicit metadata. The caller's credential is never
// forwarded; `authorization` carries toolsvc's own credential for the
// upstream, when one is configured.
const (
	MDTenant      = "x-toolsvc-tenant"
	MDSubject     = "x-toolsvc-subject"
	MDTransport   = "x-toolsvc-transport"
	MDIDPrefix    = "x-toolsvc-" // + org-id, team-id, project-id, user-id, session-id, agent-id
	MDCorrelation = "x-correlation-id"
	MDTraceparent = "traceparent"
)

// handler is the grpc.MethodHandler of one upstream tool, written as
// generated handlers are: behind the chain (Tool.Call passes no
// interceptor) it forwards the typed request as a dynamic message and
// turns the upstream's response into the tool's envelope; registered on
// the in-process channel it first runs the chain, as any method does.
func (u *Upstream) handler(m *method, fullMethod string) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		req := dynamicpb.NewMessage(m.in)
		if err := dec(req); err != nil {
			return nil, toolerr.Wrap(err, toolerr.InvalidInput, "the arguments do not decode")
		}
		if interceptor == nil {
			return u.guard(ctx, func() (proto.Message, error) { return u.forward(ctx, m, req) })
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: fullMethod}
		return interceptor(ctx, req, info, func(ctx context.Context, req any) (any, error) {
			return u.guard(ctx, func() (proto.Message, error) { return u.forward(ctx, m, req.(proto.Message)) })
		})
	}
}

func (u *Upstream) forward(ctx context.Context, m *method, req proto.Message) (proto.Message, error) {
	facts := callctx.From(ctx)
	if facts == nil {
		return nil, toolerr.New(toolerr.Internal, "internal error: upstream tool called outside the chain")
	}
	md, err := u.outgoing(ctx, facts)
	if err != nil {
		return nil, err
	}
	ctx = metadata.NewOutgoingContext(ctx, md)
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	var frame rawFrame
	opts := []grpc.CallOption{grpc.ForceCodec(rawCodec{})}
	if u.cfg.MaxResultBytes > 0 {
		opts = append(opts, grpc.MaxCallRecvMsgSize(u.cfg.MaxResultBytes))
	}
	if err := u.conn.Invoke(ctx, m.path, req, &frame, opts...); err != nil {
		if st, _ := status.FromError(err); u.cfg.MaxResultBytes > 0 && st.Code() == codes.ResourceExhausted &&
			strings.Contains(st.Message(), "larger than max") {
			// The chain's result cap renders it with the tool's hint.
			return nil, toolerr.Wrap(err, toolerr.InvalidInput, "the result of upstream %s is over its cap of %d bytes", u.cfg.Name, u.cfg.MaxResultBytes).
				WithDetails(map[string]any{"reason": "result_too_large", "maxResultBytes": u.cfg.MaxResultBytes, "upstream": u.cfg.Name})
		}
		return nil, u.mapError(ctx, err)
	}
	resp := dynamicpb.NewMessage(m.resp)
	if err := proto.Unmarshal(frame.b, resp); err != nil {
		return nil, u.malformed(err, "the response does not decode as %s", m.resp.FullName())
	}
	if err := u.validator.Validate(resp); err != nil {
		return nil, u.malformed(err, "the response breaks the rules of %s", m.resp.FullName())
	}
	h, err := u.hintsOf(m, resp)
	if err != nil {
		return nil, err
	}
	data := protoreflect.Message(resp)
	if m.data != m.resp {
		b, err := proto.Marshal(resp)
		if err != nil {
			return nil, u.malformed(err, "the response does not encode")
		}
		copied := dynamicpb.NewMessage(m.data)
		if err := proto.Unmarshal(b, copied); err != nil {
			return nil, u.malformed(err, "the response does not decode as its data")
		}
		data = copied
	}
	env := dynamicpb.NewMessage(m.envelope)
	fields := m.envelope.Fields()
	env.Set(fields.ByName("data"), protoreflect.ValueOfMessage(data))
	env.Set(fields.ByName("agent_hints"), protoreflect.ValueOfMessage(h.ProtoReflect()))
	return env, nil
}

// hintsOf takes the upstream's AgentHints out of resp, or says that the
// tool gave none: toolsvc never invents a confidence for it.
func (u *Upstream) hintsOf(m *method, resp *dynamicpb.Message) (*toolsvcv1.AgentHints, error) {
	if m.hints == nil || !resp.Has(m.hints) {
		return noHints(u.cfg.Name), nil
	}
	b, err := proto.Marshal(resp.Get(m.hints).Message().Interface())
	if err != nil {
		return nil, u.malformed(err, "the response's hints do not encode")
	}
	h := &toolsvcv1.AgentHints{}
	if err := proto.Unmarshal(b, h); err != nil {
		return nil, u.malformed(err, "the response's hints do not decode")
	}
	if err := u.validator.Validate(h); err != nil {
		return nil, u.malformed(err, "the response's hints break their rules")
	}
	return h, nil
}

// noHints are the hints of an upstream tool that gave none: no suggestion,
// confidence 0 with source quality unknown, and a reasoning that says so.
// EstimatedImpact is required by the hints' contract; it claims no
// benefit.
func noHints(upstream string) *toolsvcv1.AgentHints {
	return &toolsvcv1.AgentHints{
		Confidence:      0,
		SourceQuality:   "unknown",
		ValidityPeriod:  "immediate",
		Reasoning:       "The upstream " + upstream + " gave no hints for this result; toolsvc does not invent them, so confidence is unknown (0) rather than measured.",
		ContextNeeded:   []string{"hints from the upstream tool"},
		EstimatedImpact: &toolsvcv1.EstimatedImpact{Benefit: 0, Effort: 1, Roi: 0},
	}
}

// outgoing is the metadata the upstream receives: the call's trace,
// toolsvc's signed assertion of the caller (identity.go) and, only when
// the operator turned them on, the principal as plain headers.
func (u *Upstream) outgoing(ctx context.Context, f *callctx.Facts) (metadata.MD, error) {
	md := metadata.MD{}
	set := func(k, v string) {
		if v != "" {
			md.Set(k, v)
		}
	}
	if u.cfg.Identity.PlainHeaders {
		set(MDTenant, f.Tenant)
		set(MDSubject, f.Subject)
		set(MDTransport, f.Transport)
		for _, k := range []string{callctx.KeyOrgID, callctx.KeyTeamID, callctx.KeyProjectID, callctx.KeyUserID, callctx.KeySessionID, callctx.KeyAgentID} {
			set(MDIDPrefix+strings.ReplaceAll(k, "_", "-"), f.ID(k))
		}
	}
	set(MDCorrelation, f.CorrelationID)
	set(MDTraceparent, traceParent(ctx, f.TraceID))
	if err := u.authorize(ctx, f, md); err != nil {
		return nil, err
	}
	return md, nil
}

// traceParent continues the call's trace: the current span when tracing
// is on, else the call's trace id with a fresh parent id.
func traceParent(ctx context.Context, traceID string) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
	}
	return traceparent.Child(traceID)
}

// mapError turns an upstream failure into an error a caller can act on. A
// ToolError the upstream put in its status (a toolsvc-aware upstream
// writes them for agents) passes; any other status is mapped by code with
// a message of toolsvc's, never the upstream's text.
func (u *Upstream) mapError(ctx context.Context, err error) error {
	st, _ := status.FromError(err)
	details := map[string]any{"upstream": u.cfg.Name}
	if st.Code() == codes.DeadlineExceeded || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return toolerr.Wrap(err, toolerr.Timeout, "upstream %s did not answer in time", u.cfg.Name).WithDetails(details)
	}
	for _, d := range st.Details() {
		if te, ok := d.(*toolsvcv1.ToolError); ok && te.GetCode() != "" && te.GetCode() != string(toolerr.Internal) {
			code := toolerr.Code(te.GetCode())
			if !slices.Contains(toolerr.Codes(), code) {
				break // not a code of toolsvc's
			}
			e := toolerr.Wrap(err, code, "%s", te.GetMessage()).WithDetails(details)
			e.Violations = te.GetFieldViolations()
			return e
		}
	}
	switch st.Code() {
	case codes.Canceled:
		return toolerr.Wrap(err, toolerr.Timeout, "the call to upstream %s was cancelled", u.cfg.Name).WithDetails(details)
	case codes.Unavailable:
		return toolerr.Wrap(err, toolerr.ProviderError, "upstream %s is unavailable", u.cfg.Name).WithDetails(details)
	case codes.InvalidArgument, codes.OutOfRange, codes.FailedPrecondition:
		return toolerr.Wrap(err, toolerr.InvalidInput, "upstream %s rejected the arguments", u.cfg.Name).WithDetails(details)
	case codes.NotFound:
		return toolerr.Wrap(err, toolerr.NotFound, "upstream %s found no such resource", u.cfg.Name).WithDetails(details)
	case codes.AlreadyExists, codes.Aborted:
		return toolerr.Wrap(err, toolerr.Conflict, "upstream %s reported a conflict", u.cfg.Name).WithDetails(details)
	case codes.ResourceExhausted:
		return toolerr.Wrap(err, toolerr.RateLimited, "upstream %s is over its capacity", u.cfg.Name).WithDetails(details)
	case codes.Unauthenticated, codes.PermissionDenied:
		e := toolerr.Wrap(err, toolerr.ProviderError, "upstream %s refused toolsvc's credential", u.cfg.Name).WithDetails(details)
		e.Final = true
		return e
	case codes.Unimplemented:
		e := toolerr.Wrap(err, toolerr.ProviderError, "upstream %s does not serve this tool any more", u.cfg.Name).WithDetails(details)
		e.Final = true
		return e
	default:
		return toolerr.Wrap(err, toolerr.ProviderError, "upstream %s failed", u.cfg.Name).WithDetails(details)
	}
}

// malformed is the error of a response that is not the tool's contract:
// never passed on as data, and not retried.
func (u *Upstream) malformed(cause error, format string, args ...any) error {
	e := toolerr.Wrap(cause, toolerr.ProviderError, "upstream %s returned a malformed response: %s", u.cfg.Name, fmt.Sprintf(format, args...)).
		WithDetails(map[string]any{"upstream": u.cfg.Name, "reason": "malformed_response"})
	e.Final = true
	return e
}

// rawFrame receives a response's bytes, which forward decodes itself so
// that a response that does not decode is told apart from a failed call.
type rawFrame struct{ b []byte }

// rawCodec marshals requests as protobuf and keeps responses as bytes.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("upstream: cannot marshal %T", v)
	}
	return proto.Marshal(m)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*rawFrame)
	if !ok {
		return fmt.Errorf("upstream: cannot unmarshal into %T", v)
	}
	f.b = append(f.b[:0], data...)
	return nil
}
