package interceptors

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// boundary starts the Call and maps every error of the steps inside it to
// a gRPC status carrying the ToolError, in one place (toolerr.StatusFor),
// with the hints and metadata of the call: an agent gets its next step on
// failures too. A panic below it reaches it as the error of recoverPanic.
func boundary(serviceVersion string, metadataHeaders wire.MetadataHeaders) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := newCall(ctx, metadataHeaders)
		resp, err := next(withCall(ctx, c), req)
		if err != nil {
			return nil, toolerr.StatusFor(err, factsOf(c, serviceVersion)).Err()
		}
		return resp, nil
	}
}

// factsOf is what the error of c is rendered with.
func factsOf(c *call, serviceVersion string) toolerr.Facts {
	md := &toolsvcv1.ResultMetadata{
		Timestamp:       timestamppb.New(c.Facts.Start.UTC()),
		ExecutionTimeMs: float64(time.Since(c.Facts.Start).Microseconds()) / 1000,
		ServiceVersion:  serviceVersion,
		TraceId:         c.Facts.TraceID,
		CorrelationId:   c.Facts.CorrelationID,
		IdempotencyKey:  c.IdempotencyKey,
	}
	f := toolerr.Facts{TraceID: c.Facts.TraceID, Metadata: md, Ran: c.Ran(), Keyed: c.IdempotencyKey != ""}
	if t := c.Tool; t != nil {
		md.Tool, md.ToolVersion = t.Name, t.Version
		f.Tool = t.Name
		f.Query = t.Spec.GetCategory() == "query"
		f.Unsafe = (t.Spec.GetSideEffect() || t.Spec.GetDestructive()) && !t.Spec.GetIdempotent()
	}
	return f
}

// recoverPanic is go-grpc-middleware recovery's handler: a panic becomes
// INTERNAL for the caller, and its value and stack go to the log (with the
// call's trace id) and a counter, never to the caller.
func recoverPanic(logger *slog.Logger, m *Metrics) recovery.RecoveryHandlerFuncContext {
	return func(ctx context.Context, p any) error {
		m.panics.Inc()
		var method, traceID string
		if c := callFrom(ctx); c != nil {
			traceID = c.Facts.TraceID
		}
		if mth, ok := grpc.Method(ctx); ok {
			method = mth
		}
		logger.ErrorContext(ctx, "panic in call", slog.String("method", method), slog.String("trace_id", traceID),
			slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
		return toolerr.New(toolerr.Internal, "internal error")
	}
}
