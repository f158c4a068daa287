package synthetic

import (
	"fmt"
	"log/slog"

	"buf.build/go/protovalidate"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/door/inproc"
	"github.com/toolsvc/toolsvc/internal/door/toolservice"
	"github.com/toolsvc/toolsvc/internal/interceptors"
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
	ch := inproc.New(interceptors.Chain(interceptors.Config{
		Registry: r, Auth: auth.NewDevelopment(), Validator: v,
		Metrics: interceptors.NewMetrics(nil), Logger: slog.New(slog.DiscardHandler),
	}))
	toolsvcv1.RegisterToolServiceServer(ch, toolservice.New(r))
	return ch, nil
}
