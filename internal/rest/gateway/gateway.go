package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

// Route prefixes the gateway serves; Mount registers them.
const (
	// PrefixREST holds the resource routes generated from the protos'
	// HTTP rules, and /v1/tools.
	PrefixREST = "/v1/"
	// PrefixAPIMCP holds the /api/mcp routes (docs/REST.md, Routes).
	PrefixAPIMCP = "/api/mcp/"
	// PathOpenAPI serves the OpenAPI document.
	PathOpenAPI = "/openapi.json"
)

// Gateway is the REST transport. It is an http.Handler for the routes
// under PrefixREST, PrefixAPIMCP and PathOpenAPI; Mount puts it on a mux.
type Gateway struct {
	cfg    Config
	conn   grpc.ClientConnInterface
	mux    *runtime.ServeMux
	routes *routeTable
	cors   *corsPolicy
	// reg is the registry holder; openapi is the document of one of its
	// snapshots, built again when another is in service.
	reg       registry.Snapshots
	openapi   atomic.Pointer[openapiDoc]
	openapiMu sync.Mutex // builds one document at a time
}

// openapiDoc is the OpenAPI document of reg.
type openapiDoc struct {
	reg *registry.Registry
	doc []byte
}

// New builds the gateway. conn must be the in-process channel of the gRPC
// server (Server.Channel), so REST calls pass the one interceptor chain;
// reg holds the registry whose tools the OpenAPI document describes (a
// *registry.Live: the document follows it); cfg's zero fields take their
// defaults (Config.SetDefaults). It fails on an invalid cfg (see
// Config.Validate).
func New(ctx context.Context, conn grpc.ClientConnInterface, reg registry.Snapshots, cfg Config) (*Gateway, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	cors, err := newCORSPolicy(cfg.CORS)
	if err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, conn: allowlistConn{conn, cfg.MetadataHeaders}, cors: cors, reg: reg}
	g.mux = runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &stableJSON{runtime.JSONPb{
			MarshalOptions:   protojson.MarshalOptions{EmitDefaultValues: true},
			UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
		}}),
		runtime.WithIncomingHeaderMatcher(matchHeader(cfg.MetadataHeaders)),
		runtime.WithOutgoingHeaderMatcher(dropAll),
		runtime.WithOutgoingTrailerMatcher(dropAll),
		runtime.WithErrorHandler(g.errorHandler),
		runtime.WithRoutingErrorHandler(g.routingErrorHandler),
		runtime.WithDisablePathLengthFallback(),
		runtime.WithDisableHTTPMethodOverride(),
	)
	// ToolService (the generic routes) first, then each service's own
	// routes in the registry's order: grpc-gateway matches the latest
	// registration first.
	if err := toolsvcv1.RegisterToolServiceHandlerClient(ctx, g.mux, toolsvcv1.NewToolServiceClient(g.conn)); err != nil {
		return nil, fmt.Errorf("gateway: register ToolService: %w", err)
	}
	for _, svc := range reg.Load().Services() {
		if svc.REST == nil {
			continue
		}
		if err := svc.REST(ctx, g.mux, g.conn); err != nil {
			return nil, fmt.Errorf("gateway: register %s: %w", svc.Desc.ServiceName, err)
		}
	}
	base, err := baseDocument()
	if err != nil {
		return nil, err
	}
	paths, _ := base["paths"].(map[string]any)
	if g.routes, err = newRouteTable(paths); err != nil {
		return nil, err
	}
	first := reg.Load()
	doc, err := Document(first)
	if err != nil {
		return nil, err
	}
	g.openapi.Store(&openapiDoc{reg: first, doc: doc})
	return g, nil
}

// Mount registers the gateway on mux for PrefixREST, PrefixAPIMCP and
// PathOpenAPI.
func (g *Gateway) Mount(mux *http.ServeMux) {
	mux.Handle(PrefixREST, g)
	mux.Handle(PrefixAPIMCP, g)
	mux.Handle(PathOpenAPI, g)
}

// OpenAPI returns the OpenAPI document served at PathOpenAPI: that of the
// registry in service, built again the first time it is asked for after
// tools of upstreams appeared or disappeared. The typed routes are the
// in-tree services', which do not change; every tool is callable at
// /v1/tools/{name}:call whatever the document says. A document that
// cannot be built leaves the previous one in service.
func (g *Gateway) OpenAPI() []byte {
	if d := g.openapi.Load(); d.reg == g.reg.Load() {
		return d.doc
	}
	g.openapiMu.Lock()
	defer g.openapiMu.Unlock()
	reg, d := g.reg.Load(), g.openapi.Load()
	if d.reg == reg {
		return d.doc
	}
	doc, err := Document(reg)
	if err != nil {
		g.cfg.Logger.Error("OpenAPI document not rebuilt", slog.String("error", err.Error()))
		doc = d.doc
	}
	g.openapi.Store(&openapiDoc{reg: reg, doc: doc})
	return doc
}

// ServeHTTP serves the gateway's routes; any other path is a 404 in the
// same error format.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The chain records the transport from the context: only in-process
	// callers can set it.
	r = r.WithContext(callctx.WithTransport(r.Context(), callctx.TransportREST))
	if g.cors.handle(w, r, g.writeError) {
		return
	}
	switch path := r.URL.Path; {
	case path == PathOpenAPI:
		g.serveOpenAPI(w, r)
	case strings.HasPrefix(path, PrefixAPIMCP):
		g.serveAPIMCP(w, r)
	case strings.HasPrefix(path, PrefixREST):
		g.serveREST(w, r)
	default:
		g.writeError(w, r, notFound(r))
	}
}

// serveREST checks the route, query and body, then lets grpc-gateway
// decode the request and call the server through the channel.
func (g *Gateway) serveREST(w http.ResponseWriter, r *http.Request) {
	rt, pathFound := g.routes.match(r.Method, r.URL.Path)
	switch {
	case rt == nil && pathFound:
		g.writeError(w, r, g.methodNotAllowed(r))
		return
	case rt == nil:
		g.writeError(w, r, notFound(r))
		return
	}
	if q := rt.unknownQuery(r.URL.Query()); q != "" {
		g.writeError(w, r, invalid(http.StatusBadRequest, q, "query.unknown_parameter", "unknown query parameter %q", q))
		return
	}
	if _, err := g.readBody(w, r); err != nil {
		g.writeError(w, r, err)
		return
	}
	// grpc-gateway reads a grpc-timeout header into the call's deadline:
	// not on the allowlist, so not honoured (deadlines are the server's).
	r.Header.Del("Grpc-Timeout")
	g.mux.ServeHTTP(w, r)
}

func (g *Gateway) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		g.writeError(w, r, methodNotAllowed(r, []string{http.MethodGet, http.MethodHead}))
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		return
	}
	writeJSON(w, http.StatusOK, g.OpenAPI())
}
