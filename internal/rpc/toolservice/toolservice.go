// Package toolservice implements toolsvc.v1.ToolService: the registry as
// callers see it. Listings show a caller only the tools it may call (the
// same rule on every transport); CallTool runs any tool by name with JSON
// arguments, after the interceptor chain has resolved, authorized and
// validated the call exactly as for the tool's typed RPC.
package toolservice

import (
	"context"
	"encoding/base64"
	"strconv"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/toolresult"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

// Service implements toolsvcv1.ToolServiceServer.
type Service struct {
	toolsvcv1.UnimplementedToolServiceServer
	// reg is the registry holder: each call reads the snapshot in service.
	reg   registry.Snapshots
	state atomic.Pointer[state]
	// swapMu makes a change of snapshot one at a time, so the state
	// never goes back to an older one.
	swapMu sync.Mutex
	// swaps counts registry changes: each one drops the tool-list cache.
	swaps atomic.Uint64
	// counters are the tool-list cache's figures, across swaps.
	counters counters
}

// state is a registry snapshot and the tool-list cache built on it,
// replaced together.
type state struct {
	reg  *registry.Registry
	list *listCache
}

// New returns the ToolService of the registry reg holds: a *Registry, or
// the *registry.Live of a service whose tools change while it runs.
func New(reg registry.Snapshots) *Service {
	s := &Service{reg: reg}
	r := reg.Load()
	s.state.Store(&state{reg: r, list: newListCache(r.Latest(), &s.counters)})
	return s
}

// current returns the state of the snapshot in service. When the registry
// has changed (tools appeared or disappeared) the first caller to see it
// replaces the tool-list cache with one of its own; a listing in flight
// finishes on the snapshot it started with.
func (s *Service) current() *state {
	if st := s.state.Load(); st.reg == s.reg.Load() {
		return st
	}
	s.swapMu.Lock()
	defer s.swapMu.Unlock()
	reg, st := s.reg.Load(), s.state.Load()
	if st.reg != reg {
		st = &state{reg: reg, list: newListCache(reg.Latest(), &s.counters)}
		s.state.Store(st)
		s.swaps.Add(1)
	}
	return st
}

const defaultPageSize = 100

// ListTools lists the tools the caller may call.
func (s *Service) ListTools(ctx context.Context, req *toolsvcv1.ListToolsRequest) (*toolsvcv1.ListToolsResponse, error) {
	p := principal(ctx)
	st := s.current()
	var tools []*registry.Tool
	if req.GetAllVersions() {
		for _, t := range st.reg.All() {
			if interceptors.Visible(p, t) {
				tools = append(tools, t)
			}
		}
	} else {
		tools = st.list.visible(p)
	}
	visible := tools
	if req.GetCategory() != "" || req.GetTag() != "" {
		visible = nil // filtered into a new slice: tools may be the cache's
		for _, t := range tools {
			if (req.GetCategory() == "" || t.Spec.GetCategory() == req.GetCategory()) &&
				(req.GetTag() == "" || hasTag(t, req.GetTag())) {
				visible = append(visible, t)
			}
		}
	}
	start, err := decodePageToken(req.GetPageToken())
	if err != nil || start > len(visible) {
		return nil, toolerr.Invalid("pageToken", "page_token.valid", "not a page token returned by ListTools")
	}
	size := int(req.GetPageSize())
	if size == 0 {
		size = defaultPageSize
	}
	end := min(start+size, len(visible))
	resp := &toolsvcv1.ListToolsResponse{TotalCount: uint32(len(visible))}
	resp.Tools = make([]*toolsvcv1.ToolDefinition, 0, end-start)
	for _, t := range visible[start:end] {
		if req.GetNamesOnly() {
			resp.Tools = append(resp.Tools, &toolsvcv1.ToolDefinition{Name: t.Name})
		} else {
			resp.Tools = append(resp.Tools, t.Def)
		}
	}
	if end < len(visible) {
		resp.NextPageToken = encodePageToken(end)
	}
	return resp, nil
}

// GetTool describes one tool the caller may call.
func (s *Service) GetTool(ctx context.Context, req *toolsvcv1.GetToolRequest) (*toolsvcv1.GetToolResponse, error) {
	p := principal(ctx)
	reg := s.current().reg
	t, err := reg.Get(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, err
	}
	if !interceptors.Visible(p, t) {
		return nil, toolerr.UnknownTool(req.GetName())
	}
	resp := &toolsvcv1.GetToolResponse{Tool: t.Def}
	for _, v := range reg.Versions(t.Name) {
		if interceptors.Visible(p, v) {
			resp.Versions = append(resp.Versions, v.Version)
		}
	}
	return resp, nil
}

// CallTool runs the tool the chain resolved and admitted for this call
// (callctx.Admission.Run).
func (s *Service) CallTool(ctx context.Context, _ *toolsvcv1.CallToolRequest) (*toolsvcv1.CallToolResponse, error) {
	a := callctx.AdmissionFrom(ctx)
	if a == nil || a.Run == nil {
		return nil, toolerr.New(toolerr.Internal, "internal error: CallTool outside the interceptor chain")
	}
	resp, err := a.Run(ctx)
	if err != nil {
		return nil, err
	}
	m, ok := resp.(proto.Message)
	if !ok {
		return nil, toolerr.New(toolerr.Internal, "internal error: the tool answered %T, not a message", resp)
	}
	return Generic(m)
}

// principal is the authenticated caller of ctx (nil outside an
// authenticated call), from the call's facts.
func principal(ctx context.Context) *auth.Principal {
	if f := callctx.From(ctx); f != nil {
		p, _ := f.Principal.(*auth.Principal)
		return p
	}
	return nil
}

// Generic turns a typed tool response into a CallToolResponse (see
// toolresult.Generic).
func Generic(resp proto.Message) (*toolsvcv1.CallToolResponse, error) {
	return toolresult.Generic(resp)
}

// DataStruct renders a data message as a Struct in its protojson form (see
// toolresult.DataStruct).
func DataStruct(m proto.Message) (*structpb.Struct, error) { return toolresult.DataStruct(m) }

func hasTag(t *registry.Tool, tag string) bool {
	for _, tg := range t.Spec.GetTags() {
		if tg == tag {
			return true
		}
	}
	return false
}

func encodePageToken(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(offset)))
}

func decodePageToken(tok string) (int, error) {
	if tok == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < 3 || string(b[:2]) != "o:" {
		return 0, strconv.ErrSyntax
	}
	n, err := strconv.Atoi(string(b[2:]))
	if err != nil || n < 0 {
		return 0, strconv.ErrSyntax
	}
	return n, nil
}
