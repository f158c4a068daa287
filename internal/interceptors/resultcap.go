package interceptors

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// ResultCapFunc returns the cap of one tool's results in bytes (its own, or
// its upstream's); 0 for none.
type ResultCapFunc func(*registry.Tool) int

// resultCap refuses a result larger than its cap (docs/OPERATIONS.md
// "Result caps"): the smallest of the global MaxResultBytes and the
// tool's or upstream's own. The size is that of the result's protobuf
// encoding with its metadata, what the gRPC transport sends; JSON on REST
// and MCP is larger by a bounded factor, and the HTTP transports render
// only results that passed here. It sits just outside result, so the
// metadata is counted, and outside the cache and idempotency, so a cached
// or replayed result is held to today's cap. An upstream's reply is also
// bounded while it is read (upstreams file max_result_bytes), so it is
// never buffered beyond its cap.
func resultCap(global int, perTool ResultCapFunc) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		resp, err := next(ctx, req)
		c := callFrom(ctx)
		if c == nil || c.Tool == nil {
			return resp, err
		}
		limit := global
		if perTool != nil {
			if own := perTool(c.Tool); own > 0 && (limit <= 0 || own < limit) {
				limit = own
			}
		}
		if err != nil {
			// An upstream's reply cut off at its cap while received.
			if te, ok := toolerr.As(err); ok && te.Details["reason"] == "result_too_large" {
				c.Reason = "result too large"
				if n, ok := te.Details["maxResultBytes"].(int); ok && (limit <= 0 || n < limit) {
					limit = n
				}
				return nil, ResultTooLarge(c.Tool, 0, limit)
			}
			return resp, err
		}
		if limit <= 0 {
			return resp, nil
		}
		m, ok := resp.(proto.Message)
		if !ok {
			return resp, nil
		}
		if n := proto.Size(m); n > limit {
			c.Reason = "result too large"
			return nil, ResultTooLarge(c.Tool, n, limit)
		}
		return resp, nil
	}
}

// ResultTooLarge is the error of a result of size bytes over its cap of
// limit bytes (size 0: unknown, the upstream's reply was cut off): the
// call is fine, but must ask for less. The hint names the tool's own
// request fields that ask for less (limit, page size, cursor) when it has
// them.
func ResultTooLarge(t *registry.Tool, size, limit int) *toolerr.Error {
	var how string
	args := map[string]any{}
	lim, cur := narrowingFields(t)
	switch {
	case lim != "" && cur != "":
		how = fmt.Sprintf("call %s again with a smaller %q and page through the rest with %q", t.Name, lim, cur)
		args[lim], args["cursorField"] = "smaller", cur
	case lim != "":
		how = fmt.Sprintf("call %s again with a smaller %q", t.Name, lim)
		args[lim] = "smaller"
	case cur != "":
		how = fmt.Sprintf("call %s again asking for one page at a time with %q", t.Name, cur)
		args["cursorField"] = cur
	default:
		how = fmt.Sprintf("call %s again with narrower arguments (fewer items, a tighter filter)", t.Name)
	}
	sizeText := "larger than"
	if size > 0 {
		sizeText = fmt.Sprintf("%d bytes, over", size)
	}
	e := toolerr.New(toolerr.InvalidInput, "the result of %s is %s its cap of %d bytes and was not sent: %s",
		t.Name, sizeText, limit, how)
	e.Final = true
	details := map[string]any{"reason": "result_too_large", "maxResultBytes": limit}
	if size > 0 {
		details["resultBytes"] = size
	}
	args["maxResultBytes"] = limit
	return e.WithNext(t.Name, how, args).WithDetails(details)
}

// narrowingFields names the request fields of t that ask for less: a limit
// or page size, and a cursor or page token (JSON names).
func narrowingFields(t *registry.Tool) (limit, cursor string) {
	if t.Input == nil {
		return "", ""
	}
	fields := t.Input.Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		switch f.Name() {
		case "limit", "page_size", "max_results", "top_k":
			if limit == "" && isNumber(f) {
				limit = f.JSONName()
			}
		case "cursor", "page_token":
			if cursor == "" {
				cursor = f.JSONName()
			}
		}
	}
	return limit, cursor
}

func isNumber(f protoreflect.FieldDescriptor) bool {
	switch f.Kind() {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind,
		protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return true
	}
	return false
}
