package interceptors

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/toolerr"
)

// boundary is the outermost step. It starts the Call, turns a panic in any
// later step into INTERNAL (logged with its stack, counted, never shown to
// the caller) and maps every error to a gRPC status carrying the ToolError,
// in one place (toolerr.ToStatus).
func boundary(logger *slog.Logger, m *Metrics) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (resp any, err error) {
		c := newCall(ctx)
		ctx = withCall(ctx, c)
		defer func() {
			if r := recover(); r != nil {
				m.panics.Inc()
				logger.ErrorContext(ctx, "panic in call",
					slog.String("method", info.FullMethod), slog.String("trace_id", c.Context.GetTraceId()),
					slog.String("panic", fmt.Sprint(r)), slog.String("stack", string(debug.Stack())))
				resp, err = nil, toolerr.ToStatus(toolerr.New(toolerr.Internal, "internal error"), c.Context.GetTraceId()).Err()
			}
		}()
		resp, err = next(ctx, req)
		if err != nil {
			return nil, toolerr.ToStatus(err, c.Context.GetTraceId()).Err()
		}
		return resp, nil
	}
}
