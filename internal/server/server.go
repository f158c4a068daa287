package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"buf.build/go/protovalidate"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/base/loopback"
	"github.com/toolsvc/toolsvc/internal/base/periodic"
	"github.com/toolsvc/toolsvc/internal/base/redact"
	"github.com/toolsvc/toolsvc/internal/base/version"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/rest/gateway"
	"github.com/toolsvc/toolsvc/internal/rpc/inproc"
	"github.com/toolsvc/toolsvc/internal/rpc/toolservice"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/auditlog"
	"github.com/toolsvc/toolsvc/internal/store/backends"
	"github.com/toolsvc/toolsvc/internal/store/budget"
	"github.com/toolsvc/toolsvc/internal/store/cache"
	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

// Deps are what tool services are built from.
type Deps struct {
	Config *Config
	Store  store.Store
	Logger *slog.Logger
	// Redis is the client of Config.Redis; nil without Redis.
	Redis *redis.Client
	// Jobs receives the services' background work, which Server.Run
	// starts; nil when the services are built without a server to run
	// them (toolsvc lint), and then Jobs.Go drops them.
	Jobs *Jobs
}

// ServicesFunc builds the tool services to register. It returns a cleanup
// function (may be nil) run at shutdown. It must start no goroutine: work
// that runs in the background is handed to Deps.Jobs, which Run starts.
type ServicesFunc func(ctx context.Context, d Deps) ([]registry.Service, func(), error)

// Jobs are a server's background work: each job is started by Run (never
// by New) in Run's group, and its context ends after the listeners have
// drained, before the resources close.
type Jobs struct {
	jobs []job
}

type job struct {
	name string
	run  func(context.Context)
}

// Go adds a job that Run starts; run must return when its context ends.
// On a nil Jobs it does nothing.
func (j *Jobs) Go(name string, run func(context.Context)) {
	if j == nil {
		return
	}
	j.jobs = append(j.jobs, job{name: name, run: run})
}

// closers is a stack of release functions, closed in reverse order of
// acquisition.
type closers []func()

// push adds the release of something just acquired.
func (c *closers) push(f func()) { *c = append(*c, f) }

// close runs every release, last acquired first, and empties the stack.
func (c *closers) close() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
	*c = nil
}

// Server is a wired toolsvc, ready to Run.
type Server struct {
	cfg    *Config
	logger *slog.Logger
	store  store.Store
	// registry is the registry in service: replaced as a whole when the
	// upstreams change (Reload).
	registry *registry.Live
	grpc     *grpc.Server
	channel  *inproc.Channel
	health   *health.Server
	mux      *http.ServeMux
	metrics  *prometheus.Registry
	auditor  *auditlog.Writer
	auth     *auth.Authenticator
	// budgetExplainer answers the budget part of explain; nil: no budgets.
	budgetExplainer interceptors.BudgetExplainer
	closers         closers
	readiness       func(context.Context) error
	mcp             *mcpbridge.Bridge
	// listRelay is mcp once it is built, for the upstreams' list changes,
	// which may arrive before (listChanged).
	listRelay atomic.Pointer[mcpbridge.Bridge]
	// tools is the one ToolService of both registrars, so that its
	// tool-list cache is shared by every transport.
	tools *toolservice.Service
	// authFailures counts and logs failed authentications of the chain and
	// of the MCP bridge's 401s.
	authFailures *interceptors.AuthFailures
	// metadataHeaders are the request headers every transport copies into
	// the ToolContext's metadata (Config.ToolMetadataHeaders).
	metadataHeaders wire.MetadataHeaders
	// tls serves the certificate files of both listeners; nil without TLS.
	tls *tlsFiles
	// chainMetrics are the chain's metrics, whose summary /healthz shows.
	chainMetrics *interceptors.Metrics
	// upstreams are the upstreams of Config.UpstreamsFile (nil without
	// one), replaced by Reload.
	upstreams atomic.Pointer[upstream.Set]
	// identity signs the caller's assertion on every forwarded call
	// (identity.go).
	identity *upstream.Identity
	creds    *upstream.Credentials
	// builtin are the services of ServicesFunc, which never change.
	builtin []registry.Service
	// gateway serves /openapi.json, which follows the registry.
	gateway *gateway.Gateway
	// reloadMu serializes Reload and rebuild.
	reloadMu sync.Mutex
	// retiring close the upstream sets a reload replaced, each once: after
	// their calls' deadline, or at shutdown if that comes first (under
	// reloadMu).
	retiring map[*upstream.Set]func()
	// redis is the client of Config.Redis, or nil.
	redis *redis.Client
	// jobs are the background work Run starts.
	jobs Jobs
	// draining is set when shutdown begins: /readyz answers 503 from then
	// on, while every other route still serves (Config.ShutdownDrain).
	draining atomic.Bool
	// authReloads is the state of the auth file's reloads; nil in
	// development mode.
	authReloads *authReloads
	// budgets count the units callers spend (docs/OPERATIONS.md "Budgets").
	budgets *interceptors.Budgets
	// runs makes Run once-only.
	runs atomic.Bool
}

// New builds a Server from a completed Config: it opens the store, builds
// the tool services with services, the registry (refusing any tool that
// breaks the contract checklist), the chain and both servers. Each
// acquisition pushes its release on a stack; on an error everything
// acquired so far is released, last first, and the reason returned (never
// a partly built Server). New starts no goroutine and listens on nothing:
// background work and listeners are Run's.
func New(ctx context.Context, cfg *Config, logger *slog.Logger, services ServicesFunc) (*Server, error) {
	s := &Server{cfg: cfg, logger: logger, mux: http.NewServeMux(), metrics: prometheus.NewRegistry()}
	var stack closers
	fail := func(err error) (*Server, error) {
		stack.close()
		return nil, err
	}
	s.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metadataHeaders, err := wire.NewMetadataHeaders(cfg.ToolMetadataHeaders)
	if err != nil {
		return fail(err)
	}
	s.metadataHeaders = metadataHeaders

	st, err := backends.Open(ctx, cfg.DB, store.WithLogger(logger))
	if err != nil {
		return fail(fmt.Errorf("open store %s: %w", redact.URL(cfg.DB), redact.Error(err, cfg.DB)))
	}
	s.store = st
	stack.push(func() { _ = st.Close() })
	if backend, target, err := backends.Parse(cfg.DB); err == nil && backend == "sqlite" {
		// Where the data lives is the first thing an operator looks for.
		if abs, err := filepath.Abs(target); err == nil {
			target = abs
		}
		logger.Info("store opened", slog.String("backend", backend), slog.String("path", target))
	} else {
		logger.Info("store opened", slog.String("backend", backend), slog.String("url", redact.URL(cfg.DB)))
	}

	if err := s.openIdentity(); err != nil {
		return fail(err)
	}
	if err := s.openCredentials(); err != nil {
		return fail(err)
	}

	if err := s.openRedis(ctx, &stack); err != nil {
		return fail(err)
	}
	svcs, cleanup, err := services(ctx, Deps{Config: cfg, Store: st, Logger: logger, Redis: s.redis, Jobs: &s.jobs})
	if err != nil {
		return fail(fmt.Errorf("build tool services: %w", err))
	}
	if cleanup != nil {
		stack.push(cleanup)
	}
	s.builtin = svcs
	// An upstream's tools may change (upstreamsChanged) before the server
	// is built: that waits.
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if cfg.UpstreamsFile != "" {
		ups, err := upstream.Load(ctx, cfg.UpstreamsFile, logger, s.upstreamOptions()...)
		if err != nil {
			return fail(err)
		}
		s.upstreams.Store(ups)
		stack.push(func() {
			s.upstreams.Load().Close()
			s.reloadMu.Lock()
			defer s.reloadMu.Unlock()
			for _, retire := range s.retiring {
				retire()
			}
		})
		svcs = append(slices.Clone(svcs), ups.Services()...)
	}
	reg, err := s.buildRegistry(svcs)
	if err != nil {
		return fail(err)
	}
	s.registry = registry.NewLive(reg)
	s.metrics.MustRegister(bulkheadCollector{s})
	s.metrics.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "toolsvc_registry_tools", Help: "Tool versions in the registry.",
	}, func() float64 { return float64(s.Registry().Len()) }))

	if s.auth, err = s.authenticator(ctx); err != nil {
		return fail(err)
	}
	if cfg.AuthFile != "" {
		s.authReloads = newAuthReloads(s.metrics, cfg.AuthFile)
		s.auth.OnSwap(s.endRevoked)
	}
	// A remote JWKS is fetched again in the background, by Run.
	s.jobs.Go("JWKS refresh", s.auth.Run)
	limiter, c, err := s.limitsAndCache()
	if err != nil {
		return fail(err)
	}
	validator, err := protovalidate.New()
	if err != nil {
		return fail(fmt.Errorf("build validator: %w", err))
	}
	tracer, err := s.tracer(ctx, &stack)
	if err != nil {
		return fail(err)
	}
	m := interceptors.NewMetrics(s.metrics)
	s.chainMetrics = m
	s.authFailures = interceptors.NewAuthFailures(s.metrics, logger)
	failure, _ := auditlog.ParseFailure(cfg.AuditFailure) // checked by Complete
	s.auditor = auditlog.New(st, logger, auditlog.WithFailure(failure), auditlog.WithRegisterer(s.metrics))
	stack.push(s.auditor.Close) // writes what Run left: the records of calls answered after the jobs stopped
	s.jobs.Go("audit writer", s.auditor.Run)
	s.keepAudit(st)
	var spent budget.Store = budget.NewMemory(nil)
	if s.redis != nil {
		spent = budget.NewRedis(s.redis, cfg.RedisKeyPrefix, cfg.RedisTimeout)
	}
	s.budgets = interceptors.NewBudgets(s.auth, spent, s.metrics)
	s.budgetExplainer = s.budgets
	// The chain's settings are cfg.Chain; its wiring is filled here.
	chainCfg := cfg.Chain
	chainCfg.Registry, chainCfg.Auth, chainCfg.Limiter = s.registry, s.auth, limiter
	chainCfg.Cache, chainCfg.Group, chainCfg.Auditor, chainCfg.Validator = c, cache.NewGroup(c, cache.WithLogger(logger)), s.auditor, validator
	chainCfg.Metrics, chainCfg.Tracer, chainCfg.Logger, chainCfg.ServiceVersion = m, tracer, logger, version.Version
	chainCfg.MetadataHeaders, chainCfg.AuthFailures = s.metadataHeaders, s.authFailures
	chainCfg.Budgets, chainCfg.ResultCaps = s.budgets, s.resultCap
	if is, ok := st.(store.IdempotencyStore); ok {
		chainCfg.Idempotency = is
	}
	chain, err := interceptors.Chain(chainCfg)
	if err != nil {
		return fail(err)
	}

	grpcOpts := []grpc.ServerOption{grpc.UnaryInterceptor(chain), grpc.MaxRecvMsgSize(cfg.MaxRequestBytes),
		grpc.NumStreamWorkers(streamWorkers())}
	if cfg.TLS() {
		if s.tls, err = newTLSFiles(cfg.TLSCert, cfg.TLSKey, cfg.TLSClientCA, logger); err != nil {
			return fail(fmt.Errorf("TLS (--tls-cert %s, --tls-key %s): %w", cfg.TLSCert, cfg.TLSKey, err))
		}
		grpcOpts = append(grpcOpts, grpc.Creds(s.tls.grpcCredentials()))
	}
	s.grpc = grpc.NewServer(grpcOpts...)
	// The stream workers are goroutines grpc.NewServer starts: Stop ends
	// them (Run stops the server gracefully first).
	stack.push(s.grpc.Stop)
	s.channel = inproc.New(chain)
	s.health = health.NewServer()
	s.tools = toolservice.New(s.registry)
	for _, r := range []grpc.ServiceRegistrar{s.grpc, s.channel} {
		toolsvcv1.RegisterToolServiceServer(r, s.tools)
		for _, svc := range svcs {
			// An upstream's methods answer with toolsvc's envelope, not the
			// upstream's response: the network gRPC server does not serve
			// them (callers use ToolService.CallTool); the in-process
			// channel does, for the transports that call tools by method.
			if !svc.Forwarded() || r == grpc.ServiceRegistrar(s.channel) {
				r.RegisterService(svc.Desc, svc.Impl)
			}
		}
		healthpb.RegisterHealthServer(r, s.health)
	}
	reflection.Register(s.grpc)
	m.InitializeGRPC(s.grpc)
	s.readiness = func(ctx context.Context) error { return st.Ping(ctx) }
	s.mountConsole()
	if err := s.mountGateway(ctx); err != nil {
		return fail(err)
	}
	if err := s.mountMCP(&stack); err != nil {
		return fail(err)
	}
	s.routes()
	s.closers = stack
	return s, nil
}

// resultCap is a tool's own result cap: --tool-max-result-bytes for it, or
// its upstream's max_result_bytes, the smaller when both are set.
func (s *Server) resultCap(t *registry.Tool) int {
	limit := s.cfg.ToolMaxResultBytes[t.Name]
	if t.Source != "" {
		if n := s.upstreams.Load().ResultCaps()[t.Source]; n > 0 && (limit == 0 || n < limit) {
			limit = n
		}
	}
	return limit
}

// streamWorkers is how many long-lived goroutines serve gRPC calls. By
// default grpc-go starts a goroutine per call, whose stack then grows (and
// is copied) several times on the way through the chain and the store's
// SQLite engine: a tenth to a third of a call's CPU. Workers keep their
// grown stacks. There are enough for the calls a replica keeps in flight
// under load (64 on 2 cores, more on larger machines); a call finding
// every worker busy still gets its own goroutine, so calls never queue
// behind each other.
func streamWorkers() uint32 { return uint32(max(64, 8*runtime.GOMAXPROCS(0))) }

func (s *Server) authenticator(ctx context.Context) (*auth.Authenticator, error) {
	if s.cfg.AuthFile == "" {
		s.logger.Warn("DEVELOPMENT MODE: no --auth-file given; every caller is an anonymous principal with every permission. Never expose this beyond loopback.")
		return auth.NewDevelopment(), nil
	}
	ac, err := auth.LoadFile(s.cfg.AuthFile)
	if err != nil {
		return nil, err
	}
	for _, w := range ac.Warnings() {
		s.logger.Warn("auth file", slog.String("warning", w))
	}
	known := KnownPermissions(s.Registry())
	for _, w := range ac.LintPermissions(known) {
		s.logger.Warn("auth file: permission rule can never match a tool", slog.String("rule", w))
	}
	for _, w := range append(ac.LintRoles(known), ac.LintToolSets(ToolFacts(s.Registry()))...) {
		s.logger.Warn("auth file: toolsvc lint refuses this", slog.String("problem", w))
	}
	return auth.New(ctx, ac, auth.WithLogger(s.logger))
}

// KnownPermissions reports whether some tool of reg or some operator
// route requires resource:action; for action "*", whether any requires a
// permission on resource. It is what the auth file's grants and roles are
// linted against (auth.Config.LintPermissions, LintRoles).
func KnownPermissions(reg *registry.Registry) func(resource, action string) bool {
	known := map[string]bool{}
	for _, p := range operatorPermissions {
		known[p] = true
	}
	for _, t := range reg.All() {
		for _, p := range t.Spec.GetPermissions() {
			known[p] = true
		}
	}
	return func(resource, action string) bool {
		if action == "*" {
			for p := range known {
				if strings.HasPrefix(p, resource+":") {
					return true
				}
			}
			return false
		}
		return known[resource+":"+action]
	}
}

// ToolFacts are what tool sets select on, for every tool of reg.
func ToolFacts(reg *registry.Registry) []auth.ToolFacts {
	all := reg.All()
	out := make([]auth.ToolFacts, len(all))
	for i, t := range all {
		out[i] = interceptors.Facts(t)
	}
	return out
}

// openRedis connects the client of --redis, when set, which the rate
// limiter, the result cache and the knowledge replicas share, and checks
// that Redis answers: an unreachable Redis at start is a configuration
// error to report, not a failure every call discovers.
func (s *Server) openRedis(ctx context.Context, stack *closers) error {
	if s.cfg.Redis == "" {
		return nil
	}
	opts, err := redis.ParseURL(s.cfg.Redis)
	if err != nil {
		return fmt.Errorf("redis URL: %w", redact.Error(err, s.cfg.Redis))
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = time.Second, 500*time.Millisecond, 500*time.Millisecond
	opts.ContextTimeoutEnabled = true // a timed-out call is cut off on the socket too
	client := redis.NewClient(opts)
	stack.push(func() { _ = client.Close() })
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		return fmt.Errorf("redis %s: not reachable: %w", opts.Addr, err)
	}
	s.redis = client
	return nil
}

// limitsAndCache builds the rate limiter and result cache: in memory, or
// shared through Redis when configured.
func (s *Server) limitsAndCache() (ratelimit.Limiter, cache.Cache, error) {
	if s.redis == nil {
		return ratelimit.NewMemory(), cache.NewMemory(s.cfg.CacheBytes), nil
	}
	client := s.redis
	policy := ratelimit.FailClosed
	if s.cfg.RateLimitFailOpen {
		policy = ratelimit.FailOpen
	}
	limiter := ratelimit.NewRedis(client, ratelimit.WithTimeout(s.cfg.RedisTimeout))
	return ratelimit.WithFallback(limiter, policy, s.logger),
		cache.NewRedis(client, cache.WithLogger(s.logger), cache.WithTimeout(s.cfg.RedisTimeout)), nil
}

// routes mounts the HTTP endpoints.
func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.serveHealth)
	s.mux.HandleFunc("POST /upstreams/{upstream}/approve", s.serveApproveDefinition)
	s.mux.HandleFunc("GET /readyz", s.serveReady)
	s.mux.HandleFunc("OPTIONS /{$}", serveOptions)
	s.identityRoutes()
	s.mux.Handle("GET /metrics", s.metricsOnMain())
	s.mux.HandleFunc("GET "+ExplainPath, s.serveExplain)
}

// Registry returns the tool registry in service now.
func (s *Server) Registry() *registry.Registry { return s.registry.Load() }

// Channel returns the in-process channel (the same chain as gRPC).
func (s *Server) Channel() *inproc.Channel { return s.channel }

// Authenticator returns the authenticator every transport and the chain
// share.
func (s *Server) Authenticator() *auth.Authenticator { return s.auth }

// GRPC returns the gRPC server.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Handler returns the HTTP handler: the routes behind the door's Host
// check (hostGuard), with an HTTPS request's TLS state carried to the
// chain (withTLSPeer). The MCP endpoint (/mcp) has one guard, the
// bridge's (the same Host rule on every listener, then the Origin), so
// it is routed here, before hostGuard.
func (s *Server) Handler() http.Handler {
	routes := s.hostGuard(withTLSPeer(s.mux))
	if s.mcp == nil {
		return routes
	}
	mcp := withTLSPeer(s.mcp)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == mcpPath {
			mcp.ServeHTTP(w, r)
			return
		}
		routes.ServeHTTP(w, r)
	})
}

// Mux returns the HTTP mux, for transports that mount routes on it.
func (s *Server) Mux() *http.ServeMux { return s.mux }

// Store returns the store.
func (s *Server) Store() store.Store { return s.store }

// ErrListen wraps Run's failure to bind a listener: a start-up failure.
var ErrListen = errors.New("cannot listen")

// Run serves gRPC and HTTP until ctx ends, with every background job of
// the server (Jobs), then shuts down: /readyz turns 503 and gRPC health
// NOT_SERVING while calls are still served for ShutdownDrain, then the
// listeners close, open MCP streams are answered and ended, in-flight
// calls get ShutdownGrace to finish, the jobs stop, and everything closes.
// A listener that cannot be bound is returned (after closing everything).
// Run may be called once.
func (s *Server) Run(ctx context.Context) error {
	var lc net.ListenConfig
	var grpcLis, httpLis net.Listener
	if !s.cfg.DisableGRPC {
		lis, err := lc.Listen(ctx, "tcp", s.cfg.GRPCAddr)
		if err != nil {
			s.Close()
			return fmt.Errorf("%w: gRPC on %s: %w", ErrListen, s.cfg.GRPCAddr, err)
		}
		grpcLis = lis
	}
	if !s.cfg.DisableHTTP {
		lis, err := lc.Listen(ctx, "tcp", s.cfg.HTTPAddr)
		if err != nil {
			if grpcLis != nil {
				_ = grpcLis.Close()
			}
			s.Close()
			return fmt.Errorf("%w: HTTP on %s: %w", ErrListen, s.cfg.HTTPAddr, err)
		}
		httpLis = lis
	}
	return s.RunOn(ctx, grpcLis, httpLis)
}

// RunOn is Run on listeners already bound (nil for a disabled one), at
// the addresses of the configuration: a test binds 127.0.0.1:0 and passes
// the listener, so no other process can take the port between its choice
// and the bind. With both nil it runs the background jobs only (the stdio
// MCP server) until ctx ends.
func (s *Server) RunOn(ctx context.Context, grpcLis, httpLis net.Listener) error {
	if s.runs.Swap(true) {
		return errors.New("server: Run called twice")
	}
	// The jobs outlive ctx by the drain: a call still being served may
	// need them (the vector index's filler, the knowledge watch).
	jobsCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJobs()
	g, gctx := errgroup.WithContext(ctx)
	if err := s.serveMetrics(gctx, g); err != nil {
		closeListeners(grpcLis, httpLis)
		return err
	}
	var httpSrv *http.Server
	if lis := grpcLis; lis != nil {
		s.logger.Info("gRPC listening", slog.String("addr", lis.Addr().String()), slog.Bool("tls", s.tls != nil))
		s.warnCleartext("gRPC", s.cfg.GRPCAddr)
		g.Go(func() error { return s.grpc.Serve(lis) })
	}
	if lis := httpLis; lis != nil {
		s.logger.Info("HTTP listening", slog.String("addr", lis.Addr().String()), slog.String("url", redact.URL(s.cfg.PublicURL)))
		s.warnCleartext("HTTP", s.cfg.HTTPAddr)
		httpSrv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10, IdleTimeout: 2 * time.Minute}
		serve := func() error { return httpSrv.Serve(lis) }
		if s.tls != nil {
			httpSrv.TLSConfig = s.tls.serverConfig("h2", "http/1.1")
			serve = func() error { return httpSrv.ServeTLS(lis, "", "") }
		}
		g.Go(func() error {
			if err := serve(); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		s.shutdown(httpSrv)
		stopJobs()
		return nil
	})
	for _, j := range s.jobs.jobs {
		g.Go(func() error {
			j.run(jobsCtx)
			s.logger.Debug("background job stopped", slog.String("job", j.name))
			return nil
		})
	}
	if every := s.cfg.ListStatsInterval; every > 0 {
		g.Go(func() error { s.logListStats(jobsCtx, every); return nil })
	}
	if s.cfg.UpstreamsFile != "" {
		g.Go(func() error { s.watchUpstreams(gctx); return nil })
	}
	if s.cfg.AuthFile != "" {
		g.Go(func() error { s.watchAuth(gctx); return nil })
	}
	err := g.Wait()
	s.Close()
	if errors.Is(err, grpc.ErrServerStopped) {
		err = nil
	}
	return err
}

// warnCleartext warns at start when a listener is reachable beyond this
// host without TLS: credentials and data would cross the network in clear.
func (s *Server) warnCleartext(listener, addr string) {
	if s.tls == nil && !loopback.Addr(addr) {
		s.logger.Warn("listening on a non-loopback address without TLS: bearer tokens and data cross the network in clear; give --tls-cert and --tls-key (or terminate TLS in front and bind loopback)",
			slog.String("listener", listener), slog.String("addr", addr))
	}
}

// logListStats logs the pressure line every interval until ctx ends
// (docs/OPERATIONS.md, Watch): the calls of the interval (count, errors,
// p50/p95/p99 and maximum latency) and the tool list's
// figures: requests, hit rate, builds (a visible set computed for a new
// permission class), build failures (building cannot fail: the registry
// is fixed at start-up) and build times, average and maximum.
func (s *Server) logListStats(ctx context.Context, interval time.Duration) {
	periodic.Run(ctx, interval, s.logPressure)
}

func (s *Server) logPressure(context.Context) {
	st := s.tools.CacheStats()
	w := s.chainMetrics.TakeWindow()
	s.logger.Info("pressure", slog.String("interval", s.cfg.ListStatsInterval.String()),
		slog.Uint64("calls", w.Calls), slog.Uint64("errors", w.Errors),
		slog.Float64("p50_ms", w.P50Ms), slog.Float64("p95_ms", w.P95Ms), slog.Float64("p99_ms", w.P99Ms), slog.Float64("max_ms", w.MaxMs),
		slog.Uint64("list_requests", st.Hits+st.Misses), slog.Float64("hit_rate_pct", st.HitRatePct),
		slog.Uint64("cache_hits", st.Hits), slog.Uint64("cache_misses", st.Misses), slog.Uint64("build_count", st.Misses),
		slog.Int("build_failures", 0), slog.Float64("build_avg_ms", st.AvgBuildMs), slog.Float64("build_max_ms", st.BuildMaxMs),
		slog.Int("classes", st.Entries))
}

// shutdown stops serving in order: readiness first (for ShutdownDrain
// everything else still serves, so that a load balancer that sees /readyz
// fail stops sending calls before any is refused), then the listeners and
// open MCP streams, then in-flight calls get ShutdownGrace.
func (s *Server) shutdown(httpSrv *http.Server) {
	s.draining.Store(true)
	// gRPC health checks (a balancer's or Kubernetes' grpc probe) see
	// NOT_SERVING from now on, as /readyz sees 503.
	s.health.Shutdown()
	if d := s.cfg.ShutdownDrain; d > 0 {
		s.logger.Info("draining: /readyz answers 503, calls are still served", slog.String("drain", d.String()))
		t := time.NewTimer(d)
		<-t.C
	}
	s.logger.Info("shutting down", slog.String("grace", s.cfg.ShutdownGrace.String()))
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	done := make(chan struct{})
	if s.mcp != nil {
		// Long-lived subscriptions/listen streams and SSE streams end now,
		// answered, rather than hold the HTTP shutdown for the whole grace
		// period: their clients reconnect to another replica.
		s.mcp.EndSubscriptions()
	}
	go func() {
		if httpSrv != nil {
			_ = httpSrv.Shutdown(ctx)
		}
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.logger.Warn("grace period over; stopping hard")
		s.grpc.Stop()
		if httpSrv != nil {
			_ = httpSrv.Close()
		}
		<-done
	}
}

// Draining reports whether shutdown has begun (/readyz answers 503).
func (s *Server) Draining() bool { return s.draining.Load() }

// Close releases resources in reverse order of acquisition. Safe to call
// more than once.
func (s *Server) Close() { s.closers.close() }
