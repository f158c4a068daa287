package synthetic

import (
	"context"
	"fmt"
	"log/slog"

	"buf.build/go/protovalidate"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/rpc/inproc"
	"github.com/toolsvc/toolsvc/internal/rpc/toolservice"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/auditlog"
	"github.com/toolsvc/toolsvc/internal/store/cache"
	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
)

// Channel is the in-process channel of a server over r: ToolService
// behind the real interceptor chain (development authentication, no
// store: listings are not audited), as the MCP bridge reaches it for
// tools/list. The synthetic tools themselves have no implementation.
func Channel(r *registry.Registry) (*inproc.Channel, error) {
	v, err := protovalidate.New()
	if err != nil {
		return nil, fmt.Errorf("synthetic: validator: %w", err)
	}
	mc := cache.NewMemory(1 << 20)
	chain, err := interceptors.Chain(interceptors.Config{
		Registry: r, Auth: auth.NewDevelopment(), Validator: v, Limiter: ratelimit.NewMemory(), Cache: mc, Group: cache.NewGroup(mc),
		Auditor: auditlog.New(noAudit{}, nil), // never written to: listings are not audited
		Metrics: interceptors.NewMetrics(nil), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, fmt.Errorf("synthetic: chain: %w", err)
	}
	ch := inproc.New(chain)
	toolsvcv1.RegisterToolServiceServer(ch, toolservice.New(r))
	return ch, nil
}

// noAudit is an audit store that keeps nothing.
type noAudit struct{}

func (noAudit) AppendAudit(context.Context, *store.AuditEvent) error { return nil }
func (noAudit) ListAudit(context.Context, store.AuditFilter) ([]store.AuditEvent, string, error) {
	return nil, "", nil
}
