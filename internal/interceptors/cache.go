package interceptors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/store/cache"
)

var deterministic = proto.MarshalOptions{Deterministic: true}

// cacheResults serves cacheable tools from the cache for their cache_ttl,
// keyed by tenant, the caller's visible scope (subject and every
// identifier that selects data), tool, version, the version of the data it
// answers from when the process loads that data (the knowledge set: a
// replica never serves a result computed from a set it lacks) and the
// canonical request;
// concurrent identical misses run the tool once. Mutations are never cached;
// a successful side-effecting call invalidates the tenant's cached queries
// of every domain it declares (its own by default).
//
// A result served from the cache is rendered once per transport: the
// call's callctx.RenderSlot, when its transport put one in the context
// and this call is the first to claim it, gets the Rendered shared by
// every call served the same value of the same tool (renderings).
func cacheResults(store cache.Cache, g *cache.Group, m *Metrics, logger *slog.Logger) grpc.UnaryServerInterceptor {
	rendered := newRenderings(renderedBudget)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := callFrom(ctx)
		if c.Tool == nil || c.Principal == nil {
			return next(ctx, req)
		}
		// Claimed before the tool runs, so that a call the tool makes
		// with this context cannot fill the transport's slot.
		slot := callctx.RenderSlotFrom(ctx)
		if slot != nil && !slot.Claim(c) {
			slot = nil
		}
		spec := c.Tool.Spec
		if !spec.GetCacheable() {
			resp, err := next(ctx, req)
			if err == nil && len(c.Tool.Invalidates) > 0 {
				for _, d := range c.Tool.Invalidates {
					if ierr := store.InvalidateDomain(ctx, c.Principal.Tenant, d); ierr != nil {
						logger.WarnContext(ctx, "cache invalidation failed", slog.String("domain", d), slog.String("error", ierr.Error()))
					}
				}
			}
			return resp, err
		}
		args, err := deterministic.Marshal(c.Request)
		if err != nil {
			return next(ctx, req)
		}
		tool := c.Tool.Name
		if c.Generic {
			tool += "#generic"
		}
		key := cache.Key{Tenant: c.Principal.Tenant, Scope: scopeOf(ctx, c), Tool: tool, Version: c.Tool.Version, Domain: c.Tool.Domain, Args: args}
		if dv := c.Tool.DataVersion; dv != nil {
			// The data is pinned for the handler: the version in the key is
			// the one it answers from, even if a reload lands meanwhile.
			ctx, key.Data = dv(ctx, c.Principal.Tenant)
		}
		var fresh any
		val, hit, err := g.Do(ctx, key, time.Duration(spec.GetCacheTtl())*time.Second, func(ctx context.Context) ([]byte, bool, error) {
			resp, err := next(ctx, req)
			if err != nil {
				return nil, false, err
			}
			fresh = resp
			b, merr := deterministic.Marshal(resp.(proto.Message))
			return b, merr == nil, nil
		})
		if err != nil {
			return nil, err
		}
		if hit {
			m.cache.WithLabelValues(c.Tool.Name, "hit").Inc()
		} else {
			m.cache.WithLabelValues(c.Tool.Name, "miss").Inc()
		}
		if fresh != nil {
			return fresh, nil
		}
		// Served from the cache, or shared from another caller's load.
		out := c.Tool.Output.New().Interface()
		if c.Generic {
			out = &toolsvcv1.CallToolResponse{}
		}
		if err := proto.Unmarshal(val, out); err != nil {
			return next(ctx, req)
		}
		c.Cached = hit
		if slot != nil {
			slot.Fill(rendered.get(renderedTool{tool: c.Tool, generic: c.Generic}, val))
		}
		return out, nil
	}
}

// scopeOf is the caller's visible scope: what, besides the tenant and the
// arguments, selects the data a query sees.
func scopeOf(ctx context.Context, c *call) string {
	ids := c.Facts.Identifiers
	keys := make([]string, 0, len(ids))
	for k := range ids {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(c.Principal.Subject)
	for _, k := range keys {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(ids[k])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16])
}
