package interceptors

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// resultFields caches the data/agent_hints/metadata fields of each
// response type.
type resultFields struct {
	data, hints, metadata protoreflect.FieldDescriptor
}

// resultFieldCache is keyed by the descriptor itself, not its name: two
// registries (an upstream's contracts read twice) may hold different
// descriptors of one name, and a field descriptor belongs to one.
var resultFieldCache sync.Map // protoreflect.MessageDescriptor -> resultFields

func fieldsOf(md protoreflect.MessageDescriptor) resultFields {
	if f, ok := resultFieldCache.Load(md); ok {
		return f.(resultFields)
	}
	f := resultFields{
		data:     md.Fields().ByName("data"),
		hints:    md.Fields().ByName("agent_hints"),
		metadata: md.Fields().ByName("metadata"),
	}
	resultFieldCache.Store(md, f)
	return f
}

// result is the tool contract's post-execution validation and the one place result
// metadata is filled in. A fresh result must have data, complete agent hints
// (every required field, confidence in 0..1, all ranges) and then gets its
// metadata; a handler that breaks the contract yields INTERNAL to the caller
// and a logged violation, so a broken result never reaches an agent.
// Deprecated tools get a deprecation warning in their hints.
func result(v protovalidate.Validator, serviceVersion string, logger *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := callFrom(ctx)
		resp, err := next(ctx, req)
		if err != nil || c.Tool == nil {
			return resp, err
		}
		m, ok := resp.(proto.Message)
		if !ok {
			return nil, toolerr.New(toolerr.Internal, "internal error")
		}
		pr := m.ProtoReflect()
		f := fieldsOf(pr.Descriptor())
		if f.data == nil || f.hints == nil || f.metadata == nil {
			return nil, contractBroken(ctx, logger, c, errors.New("response has no data, agent_hints or metadata field"))
		}
		if !c.Cached {
			if !pr.Has(f.data) {
				return nil, contractBroken(ctx, logger, c, errors.New("data is null on success"))
			}
			if !pr.Has(f.hints) {
				return nil, contractBroken(ctx, logger, c, errors.New("agent_hints missing"))
			}
			// hints.Valid proves the common case in a fraction of
			// protovalidate's time; anything it cannot prove valid goes
			// to protovalidate, which decides and names the violation.
			h := pr.Get(f.hints).Message().Interface()
			if ah, ok := h.(*toolsvcv1.AgentHints); !ok || !hints.Valid(ah) {
				if err := v.Validate(h); err != nil {
					return nil, contractBroken(ctx, logger, c, err)
				}
			}
		}
		if c.Tool.Deprecated() {
			d := c.Tool.Spec.GetDeprecated()
			logger.WarnContext(ctx, "deprecated tool called", slog.String("tool", c.Tool.Name), slog.String("version", c.Tool.Version),
				slog.String("replacement", d.GetReplacement()), slog.String("removal_date", d.GetRemovalDate()),
				slog.String("trace_id", c.Facts.TraceID))
			if h, ok := pr.Mutable(f.hints).Message().Interface().(*toolsvcv1.AgentHints); ok {
				addDeprecationWarning(h, c)
			}
		}
		pr.Set(f.metadata, protoreflect.ValueOfMessage(metadataOf(c, serviceVersion).ProtoReflect()))
		return resp, nil
	}
}

func metadataOf(c *call, serviceVersion string) *toolsvcv1.ResultMetadata {
	return &toolsvcv1.ResultMetadata{
		Tool:            c.Tool.Name,
		ToolVersion:     c.Tool.Version,
		Timestamp:       timestamppb.New(c.Facts.Start.UTC()),
		ExecutionTimeMs: float64(time.Since(c.Facts.Start).Microseconds()) / 1000,
		ServiceVersion:  serviceVersion,
		TraceId:         c.Facts.TraceID,
		CorrelationId:   c.Facts.CorrelationID,
		Cached:          c.Cached,
		Replayed:        c.Replayed,
		IdempotencyKey:  c.IdempotencyKey,
	}
}

func contractBroken(ctx context.Context, logger *slog.Logger, c *call, cause error) error {
	logger.ErrorContext(ctx, "tool result breaks the ToolResult contract",
		slog.String("tool", c.Tool.Name), slog.String("version", c.Tool.Version),
		slog.String("trace_id", c.Facts.TraceID), slog.String("violation", cause.Error()))
	return toolerr.Wrap(cause, toolerr.Internal, "internal error: the tool produced an invalid result")
}

func addDeprecationWarning(h *toolsvcv1.AgentHints, c *call) {
	d := c.Tool.Spec.GetDeprecated()
	h.Warnings = append(h.Warnings, &toolsvcv1.Warning{
		Type:         "deprecation",
		Severity:     "medium",
		Message:      "tool " + c.Tool.Name + " is deprecated since " + d.GetSince() + " and will be removed on " + d.GetRemovalDate(),
		SuggestedFix: "use " + d.GetReplacement() + " instead",
		RelatedIds:   []string{d.GetReplacement()},
	})
}
