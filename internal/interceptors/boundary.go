package interceptors

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/toolerr"
)

// boundary starts the Call and maps every error of the steps inside it to
// a gRPC status carrying the ToolError, in one place (toolerr.ToStatus).
// A panic below it reaches it as the error of recoverPanic.
func boundary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := newCall(ctx)
		resp, err := next(withCall(ctx, c), req)
		if err != nil {
			return nil, toolerr.ToStatus(err, c.Context.GetTraceId()).Err()
		}
		return resp, nil
	}
}

// recoverPanic is go-grpc-middleware recovery's handler: a panic becomes
// INTERNAL for the caller, and its value and stack go to the log (with the
// call's trace id) and a counter, never to the caller.
func recoverPanic(logger *slog.Logger, m *Metrics) recovery.RecoveryHandlerFuncContext {
	return func(ctx context.Context, p any) error {
		m.panics.Inc()
		var method, traceID string
		if c := CallFrom(ctx); c != nil {
			traceID = c.Context.GetTraceId()
		}
		if mth, ok := grpc.Method(ctx); ok {
			method = mth
		}
		logger.ErrorContext(ctx, "panic in call", slog.String("method", method), slog.String("trace_id", traceID),
			slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
		return toolerr.New(toolerr.Internal, "internal error")
	}
}
