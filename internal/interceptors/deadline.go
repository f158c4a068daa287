package interceptors

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// Deadlines are the default deadlines of each response_time class. The
// caller's deadline wins when it is shorter.
type Deadlines struct {
	Fast, Medium, Slow time.Duration
}

// DefaultDeadlines are fast 2 s, medium 10 s and slow 60 s.
var DefaultDeadlines = Deadlines{Fast: 2 * time.Second, Medium: 10 * time.Second, Slow: 60 * time.Second}

func (d Deadlines) forClass(class string) time.Duration {
	switch class {
	case "fast":
		return d.Fast
	case "slow":
		return d.Slow
	default:
		return d.Medium
	}
}

// deadline bounds every tool call by its class's deadline; a call that runs
// out returns TIMEOUT and its context is cancelled, so the work stops.
func deadline(d Deadlines) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := callFrom(ctx)
		if c.Tool == nil {
			return next(ctx, req)
		}
		limit := d.forClass(c.Tool.Spec.GetResponseTime())
		// The time the call's client takes to answer a question of the
		// tool (elicitation, sampling) is not the tool's: the clock stops.
		ctx, cancel := callctx.WithDeadlineBetweenQuestions(ctx, limit)
		defer cancel()
		if f := callctx.From(ctx); f != nil {
			if dl, ok := ctx.Deadline(); ok {
				f.Deadline = dl
			} else {
				f.Deadline = time.Now().Add(limit) // at the earliest: questions move it
			}
		}
		resp, err := next(ctx, req)
		if err != nil && ctx.Err() != nil {
			if _, typed := toolerr.As(err); !typed || toolerr.Classify(err).Code == toolerr.Internal {
				if errors.Is(context.Cause(ctx), callctx.ErrNoAnswer) {
					return nil, toolerr.Wrap(err, toolerr.Timeout, "tool %q asked the client a question, and no answer came within %s", c.Tool.Name, callctx.AnswerWait)
				}
				return nil, toolerr.Wrap(err, toolerr.Timeout, "tool %q did not finish within its deadline", c.Tool.Name)
			}
		}
		return resp, err
	}
}
