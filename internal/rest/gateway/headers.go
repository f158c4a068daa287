package gateway

import (
	"context"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// forwarded is wire.ForwardedHeaders as a set of lower-case names.
var forwarded = func() map[string]bool {
	m := make(map[string]bool, len(wire.ForwardedHeaders))
	for _, h := range wire.ForwardedHeaders {
		m[strings.ToLower(h)] = true
	}
	return m
}()

// matchHeader is grpc-gateway's incoming header matcher: an allowlisted
// header keeps its name (lower case, as gRPC metadata wants it); every other
// header is dropped, cookies and proxy credentials included. Authorization
// is left out because grpc-gateway always forwards it itself; matching it
// too would send it twice.
func matchHeader(allowed wire.MetadataHeaders) runtime.HeaderMatcherFunc {
	return func(key string) (string, bool) {
		k := strings.ToLower(key)
		if k == "user-agent" {
			return wire.HeaderClientUserAgent, true
		}
		return k, forwarded[k] && k != wire.HeaderAuthorization || allowed.Allowed(k)
	}
}

// dropAll keeps gRPC response metadata out of HTTP responses: handlers'
// headers and trailers are internal to the server.
func dropAll(string) (string, bool) { return "", false }

// allowlistConn wraps the channel so that only allowlisted metadata reaches
// the chain whatever grpc-gateway adds on its own (x-forwarded-for,
// x-forwarded-host, its authorization passthrough): the allowlist is
// enforced at the one place every REST call passes.
type allowlistConn struct {
	grpc.ClientConnInterface
	allowed wire.MetadataHeaders
}

func (c allowlistConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return c.ClientConnInterface.Invoke(c.filterMetadata(ctx), method, args, reply, opts...)
}

func (c allowlistConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.ClientConnInterface.NewStream(c.filterMetadata(ctx), desc, method, opts...)
}

func (c allowlistConn) filterMetadata(ctx context.Context) context.Context {
	md, ok := metadata.FromOutgoingContext(ctx)
	if !ok {
		return ctx
	}
	kept := metadata.MD{}
	for k, vs := range md {
		if forwarded[k] || c.allowed.Allowed(k) {
			kept[k] = vs
		}
	}
	return metadata.NewOutgoingContext(ctx, kept)
}
