package mcpbridge

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// SyntheticTools grows b's tool set to n tools for tests and benchmarks,
// by copying the registered tools under new names
// (tool-0001-query-knowledge, ...): the same rendering work per tool as
// real ones. The registry is fixed, so ToolService cannot list them:
// listings come from a channel that pages the synthetic set, every tool
// visible, as ListTools would for a caller who may see them all.
func SyntheticTools(b *Bridge, n int) error {
	cur := b.catalog.Load().tools
	real := cur.latest
	idx := &toolIndex{byName: map[string]*registry.Tool{}, renderedByName: map[string][]byte{}, compact: cur.compact}
	errSchema := cur.errSchema
	defs := make([]*toolsvcv1.ToolDefinition, 0, n)
	for i := 0; i < n; i++ {
		t := *real[i%len(real)]
		t.Name = fmt.Sprintf("tool-%04d-%s", i, t.Name)
		r, err := renderCompact(&t, errSchema, cur.compact)
		if err != nil {
			return err
		}
		idx.latest = append(idx.latest, &t)
		idx.add(&t, r)
		defs = append(defs, &toolsvcv1.ToolDefinition{Name: t.Name})
	}
	idx.errSchema = errSchema
	b.replaceTools(idx, syntheticListing{defs})
	return nil
}

// syntheticListing answers ListTools with its tools, paged with the page
// tokens of ToolService.
type syntheticListing struct{ tools []*toolsvcv1.ToolDefinition }

func (s syntheticListing) Invoke(_ context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	if method != listToolsMethod {
		return status.Errorf(toolerr.Internal.GRPCCode(), "synthetic listing: unexpected %s", method)
	}
	req := args.(*toolsvcv1.ListToolsRequest)
	start := 0
	if tok := req.GetPageToken(); tok != "" {
		if _, err := fmt.Sscanf(tok, "o:%d", &start); err != nil || start <= 0 || start >= len(s.tools) {
			return toolerr.ToStatus(toolerr.Invalid("pageToken", "page_token.valid", "not a page token"), "").Err()
		}
	}
	end := min(start+int(req.GetPageSize()), len(s.tools))
	out := reply.(*toolsvcv1.ListToolsResponse)
	proto.Reset(out)
	out.Tools, out.TotalCount = s.tools[start:end], uint32(len(s.tools))
	if end < len(s.tools) {
		out.NextPageToken = fmt.Sprintf("o:%d", end)
	}
	return nil
}

func (syntheticListing) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	panic("no streams")
}

// OnSessionAdmitted has b call f with the id of every session the shared
// registry admits, before b's cache knows it (nil: no hook).
func OnSessionAdmitted(b *Bridge, f func(id string)) { b.setHooks(func(h *hooks) { h.admitted = f }) }

// OnFanoutHeard has b call f with every fleet message it has applied.
func OnFanoutHeard(b *Bridge, f func(msg string)) { b.setHooks(func(h *hooks) { h.heard = f }) }

// Publish tells b's fleet msg, as b tells it what changed.
func Publish(b *Bridge, msg string) { b.publish(msg) }

func (b *Bridge) setHooks(set func(*hooks)) {
	h := &hooks{}
	if old := b.hooks.Load(); old != nil {
		*h = *old
	}
	set(h)
	b.hooks.Store(h)
}
