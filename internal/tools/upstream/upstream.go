package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolsvc/toolsvc/internal/base/redact"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/store"
)

// Upstream is one connected upstream service.
type Upstream struct {
	cfg       Config
	conn      *grpc.ClientConn
	validator protovalidate.Validator
	services  []registry.Service
	methods   int
	loadErr   string // why the contracts could not be read, if they could not
	// mcp is the client of an upstream MCP server (conn is then nil).
	mcp *mcpClient
	// refused are an MCP server's tools that broke the tool contract (docs/CONTRACTS.md)
	// before reaching the registry.
	refused []RefusedTool
	// mu guards services, methods, loadErr and refused, which an MCP
	// server's notifications/tools/list_changed replaces at run time.
	mu sync.Mutex
	// refreshMu serializes refreshes.
	refreshMu sync.Mutex
	set       *Set
	logger    *slog.Logger
	// held are the changed definitions pinning holds (pin.go), guarded by
	// mu; bulk is the upstream's bulkhead (bulkhead.go).
	held []HeldChange
	bulk *bulkhead
	// names maps the served names of an MCP server's tools to the names it
	// lists, guarded by mu.
	names map[string]string
	// listing is a 2026 server's tools/list while its ttlMs lasts,
	// guarded by mu; listStale says the server's list changed since.
	listing   *toolListing
	listStale atomic.Bool
	// subs counts the relayed resource subscriptions (subscribe.go).
	subs subscriptions
}

// Set is every upstream of an upstreams file.
type Set struct {
	ups      []*Upstream
	onChange func()
	// onListChanged hears an upstream's resources or prompts list change
	// (WithOnListChanged).
	onListChanged func(method string)
	// onResourceUpdated hears a subscribed resource change
	// (WithOnResourceUpdated).
	onResourceUpdated func(uri string)
	// defs and auditor are the store of WithStore; pins what pinning
	// keeps without one; approvalsEvery how often approvals made
	// elsewhere are read; stop ends that.
	defs           store.DefinitionStore
	auditor        auditAppender
	pins           pins
	approvalsEvery time.Duration
	stop           context.CancelFunc
	// callers carries the caller to the upstreams (callerauth.go).
	callers callerAuth
}

// Option configures Load and Connect.
type Option func(*Set)

// WithOnChange calls f after an upstream's tools changed at run time (an
// MCP server sent notifications/tools/list_changed and its list was read
// again): the caller builds its registry again from Services. Default:
// nothing is told.
func WithOnChange(f func()) Option { return func(s *Set) { s.onChange = f } }

// SourcePrefix prefixes a registry.Service's Source for upstream tools.
const SourcePrefix = "upstream "

// Load reads the upstreams file and every upstream's contracts. A file
// that does not parse is an error (an operator's mistake to fix before
// serving); an upstream that cannot be reached, or whose contracts cannot
// be read, is logged and reported on /healthz and serves no tool, while
// the others are served.
func Load(ctx context.Context, path string, logger *slog.Logger, opts ...Option) (*Set, error) {
	f, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Connect(ctx, f, logger, opts...)
}

// Connect connects to the upstreams of f and reads their contracts.
func Connect(ctx context.Context, f *File, logger *slog.Logger, opts ...Option) (*Set, error) {
	validator, err := protovalidate.New()
	if err != nil {
		return nil, fmt.Errorf("upstreams: build validator: %w", err)
	}
	s := &Set{}
	for _, o := range opts {
		o(s)
	}
	for _, cfg := range f.Upstreams {
		if cfg.MCP != nil {
			s.ups = append(s.ups, s.connectMCP(ctx, cfg, validator, logger))
			continue
		}
		creds, err := transportCredentials(cfg.TLS)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("upstream %s: %w", cfg.Name, err)
		}
		conn, err := grpc.NewClient(cfg.Address, grpc.WithTransportCredentials(creds))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("upstream %s: %w", cfg.Name, err)
		}
		u := &Upstream{cfg: cfg, conn: conn, validator: validator, set: s, logger: logger, bulk: newBulkhead(cfg)}
		s.ups = append(s.ups, u)
		if err := u.load(ctx); err != nil {
			u.loadErr = u.errText(err)
			logger.Error("upstream not served: its contracts could not be read",
				slog.String("upstream", cfg.Name), slog.String("address", cfg.Address), slog.String("error", u.loadErr))
			continue
		}
		logger.Info("upstream loaded", slog.String("upstream", cfg.Name), slog.String("address", cfg.Address), slog.Int("tools", u.methods))
	}
	if err := s.credentialTools(); err != nil {
		s.Close()
		return nil, err
	}
	if s.approvalsEvery > 0 && s.defs != nil {
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		s.stop = cancel
		go s.watchApprovals(wctx, s.approvalsEvery)
	}
	return s, nil
}

func transportCredentials(t TLS) (credentials.TransportCredentials, error) {
	if t.Mode == "plaintext" {
		return insecure.NewCredentials(), nil
	}
	cfg, err := tlsConfig(t)
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(cfg), nil
}

// tlsConfig is the client TLS of an upstream: the system roots or a CA
// file, and a client certificate for mtls.
func tlsConfig(t TLS) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file %s: no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.Mode == "mtls" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// load reads the contracts and builds the services.
func (u *Upstream) load(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	var err error
	var fds = u.cfg.Contracts.fds
	switch {
	case fds != nil:
	case u.cfg.Contracts.Reflection:
		fds, err = fetchReflection(ctx, u.conn)
		if err != nil {
			return fmt.Errorf("server reflection: %w", err)
		}
	default:
		fds, err = readDescriptorSet(u.cfg.Contracts.DescriptorSet)
		if err != nil {
			return err
		}
	}
	c, err := buildContracts(fds, u.cfg.overlays)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(c.services))
	for name := range c.services {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		desc := &grpc.ServiceDesc{ServiceName: name, HandlerType: (*any)(nil)}
		for _, m := range c.services[name] {
			desc.Methods = append(desc.Methods, grpc.MethodDesc{MethodName: m.name, Handler: u.handler(m, "/"+name+"/"+m.name)})
			u.methods++
		}
		u.services = append(u.services, registry.Service{Desc: desc, Impl: u, Files: c.files, Source: SourcePrefix + u.cfg.Name})
	}
	if u.methods == 0 {
		return errNoTools
	}
	return nil
}

// connectMCP starts the client of an MCP server and reads its tools. A
// server that cannot be reached is reported, as a gRPC upstream is.
func (s *Set) connectMCP(ctx context.Context, cfg Config, validator protovalidate.Validator, logger *slog.Logger) *Upstream {
	u := &Upstream{cfg: cfg, validator: validator, set: s, logger: logger, bulk: newBulkhead(cfg)}
	u.mu.Lock()
	defer u.mu.Unlock()
	client, err := newMCPClient(cfg, logger, u.notified)
	if err == nil {
		u.mcp = client
		err = u.loadMCP(ctx)
	}
	if err != nil {
		u.loadErr = u.errText(err)
		logger.Error("upstream not served: its tools could not be read",
			slog.String("upstream", cfg.Name), slog.String("mcp", u.endpoint()), slog.String("error", u.loadErr))
		return u
	}
	for _, r := range u.refused {
		logger.Error("tool refused: not served", slog.String("source", SourcePrefix+cfg.Name), slog.String("tool", r.Tool),
			slog.String("rule", r.Rule), slog.String("message", r.Message))
	}
	logger.Info("upstream loaded", slog.String("upstream", cfg.Name), slog.String("mcp", u.endpoint()), slog.Int("tools", u.methods))
	return u
}

// notified hears the MCP server's notifications: a changed tool list is
// read again, in the background (the notification may arrive on the
// goroutine that delivers the answer to that read).
func (u *Upstream) notified(method string, params ...json.RawMessage) {
	if method == notificationUpdated && len(params) > 0 {
		u.resourceUpdated(params[0])
		return
	}
	if method == "notifications/tools/list_changed" {
		u.listStale.Store(true)
		go u.refresh()
	}
	u.federatedChanged(method)
}

// refresh reads the MCP server's tools again and tells the set's owner,
// which builds its registry again: tools appear, change or disappear.
func (u *Upstream) refresh() {
	u.refreshMu.Lock()
	defer u.refreshMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), u.cfg.Timeout)
	defer cancel()
	u.mu.Lock()
	u.services, u.refused, u.methods, u.loadErr = nil, nil, 0, ""
	if err := u.loadMCP(ctx); err != nil {
		u.loadErr = u.errText(err)
	}
	served, loadErr := u.methods, u.loadErr
	u.mu.Unlock()
	u.logger.Info("upstream tools read again: the server said its list changed",
		slog.String("upstream", u.cfg.Name), slog.Int("tools", served), slog.String("error", loadErr))
	if u.set.onChange != nil {
		u.set.onChange()
	}
}

// endpoint is where the upstream is, as logs, health and `toolsvc lint`
// show it: its address, its MCP URL with its secrets redacted, or its
// command's program (arguments may carry a token).
func (u *Upstream) endpoint() string {
	switch {
	case u.cfg.MCP == nil:
		return u.cfg.Address
	case u.cfg.MCP.URL != "":
		return redact.URL(u.cfg.MCP.URL)
	default:
		return redact.Command(u.cfg.MCP.Command)
	}
}

// errText is err as logs, health and `toolsvc lint` show it: an HTTP
// client's error quotes the URL, a server's message may quote anything,
// so the URL's secrets and the upstream's token are replaced.
func (u *Upstream) errText(err error) string {
	text := err.Error()
	if u.cfg.MCP != nil {
		text = redact.Text(text, u.cfg.MCP.URL)
	}
	if len(u.cfg.token) >= 3 {
		text = strings.ReplaceAll(text, u.cfg.token, redact.Mark)
	}
	return text
}

// Services returns the tool services of every upstream whose contracts
// were read.
func (s *Set) Services() []registry.Service {
	out := slices.Clone(s.callers.services)
	for _, u := range s.ups {
		u.mu.Lock()
		out = append(out, u.services...)
		u.mu.Unlock()
	}
	return out
}

// ResultCaps returns the max_result_bytes of every upstream that sets one,
// by registry source (SourcePrefix and the upstream's name).
func (s *Set) ResultCaps() map[string]int {
	out := map[string]int{}
	if s == nil {
		return out
	}
	for _, u := range s.ups {
		if u.cfg.MaxResultBytes > 0 {
			out[SourcePrefix+u.cfg.Name] = u.cfg.MaxResultBytes
		}
	}
	return out
}

// MaxTimeout is the longest call deadline of the set's upstreams: after
// it, no call that started on them is still running.
func (s *Set) MaxTimeout() time.Duration {
	var d time.Duration
	for _, u := range s.ups {
		d = max(d, u.cfg.Timeout)
	}
	return d
}

// Close closes every connection.
func (s *Set) Close() {
	if s.stop != nil {
		s.stop()
	}
	for _, u := range s.ups {
		u.close()
	}
}

func (u *Upstream) close() {
	if u.conn != nil {
		_ = u.conn.Close()
	}
	if u.mcp != nil {
		u.mcp.close()
	}
}

// Health is one upstream on /healthz and in `toolsvc lint`.
type Health struct {
	Name string `json:"name"`
	// Kind is "mcp" for an MCP server, empty for a gRPC service.
	Kind    string `json:"kind,omitempty"`
	Address string `json:"address"`
	// Reachable: its contracts were read and its connection is not failing.
	Reachable bool `json:"reachable"`
	// State is the gRPC connection state (IDLE, READY, TRANSIENT_FAILURE, ...).
	State string `json:"state"`
	// Error is why the contracts could not be read.
	Error   string        `json:"error,omitempty"`
	Served  []string      `json:"tools_served"`
	Refused []RefusedTool `json:"tools_refused"`
	// Serving is what the operator decided of an MCP server's tools
	// (naming.go); Held the changed definitions pinning holds (pin.go);
	// Bulkhead the upstream's bound and circuit (bulkhead.go).
	Serving  *ServingHealth `json:"serving,omitempty"`
	Held     []HeldChange   `json:"definitions_held,omitempty"`
	Bulkhead *BulkheadState `json:"bulkhead,omitempty"`
	// Protocol is the MCP revision toolsvc speaks to an MCP server, and
	// how it was chosen (mcp.protocol, discovery or the fallback).
	Protocol *ProtocolHealth `json:"protocol,omitempty"`
}

// ProtocolHealth is the MCP revision spoken to an upstream.
type ProtocolHealth struct {
	// Configured is mcp.protocol: auto, 2026-07-28 or 2025-11-25.
	Configured string `json:"configured"`
	// Revision is the revision spoken ("" until the server answered).
	Revision string `json:"revision"`
	// Chosen says how: "discovered (server/discover)", "configured ...",
	// or "fallback: server/discover answered ...".
	Chosen string `json:"chosen,omitempty"`
}

// RefusedTool is a tool of an upstream that is not served, and why.
type RefusedTool struct {
	Tool    string `json:"tool"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// Health reports every upstream against the registry built from its
// services.
func (s *Set) Health(reg *registry.Registry) []Health {
	out := make([]Health, 0, len(s.ups))
	for _, u := range s.ups {
		src := SourcePrefix + u.cfg.Name
		u.mu.Lock()
		h := Health{Name: u.cfg.Name, Address: u.endpoint(), Error: u.loadErr, Served: []string{}, Refused: slices.Clone(u.refused),
			Held: slices.Clone(u.held), Serving: u.servingHealth()}
		loadErr := u.loadErr // a refresh replaces it under mu
		u.mu.Unlock()
		if u.bulk != nil {
			b := u.bulk.snapshot()
			h.Bulkhead = &b
		}
		if u.mcp != nil {
			rev, how := u.mcp.protocolState()
			h.Protocol = &ProtocolHealth{Configured: u.mcp.want, Revision: rev, Chosen: how}
			if how != "" {
				h.Protocol.Chosen = u.errText(errors.New(how)) // a fallback quotes the server's answer
			}
		}
		if u.conn != nil {
			state := u.conn.GetState()
			h.State = state.String()
			h.Reachable = loadErr == "" && state != connectivity.TransientFailure && state != connectivity.Shutdown
		} else {
			h.Kind, h.State = "mcp", "READY"
			h.Reachable = loadErr == ""
			if !h.Reachable {
				h.State = "TRANSIENT_FAILURE"
			}
		}
		if h.Refused == nil {
			h.Refused = []RefusedTool{}
		}
		if reg != nil {
			for _, t := range reg.All() {
				if t.Source == src {
					h.Served = append(h.Served, t.Name+"@"+t.Version)
				}
			}
			for _, r := range reg.Refused() {
				if r.Source == src {
					name := r.Tool
					if name == "" {
						name = r.Method
					}
					h.Refused = append(h.Refused, RefusedTool{Tool: name, Rule: r.Rule, Message: r.Message})
				}
			}
		}
		out = append(out, h)
	}
	return out
}

// Revisions returns the MCP revision spoken to each MCP server that
// answered, by upstream name, for metrics.
func (s *Set) Revisions() map[string]string {
	out := map[string]string{}
	for _, u := range s.ups {
		if u.mcp != nil {
			if rev := u.mcp.revision(); rev != "" {
				out[u.cfg.Name] = rev
			}
		}
	}
	return out
}

// Refused returns the tools of MCP servers that broke the tool contract (docs/CONTRACTS.md)
// before reaching the registry, for `toolsvc lint`.
func (s *Set) Refused() []registry.Refusal {
	var out []registry.Refusal
	for _, u := range s.ups {
		u.mu.Lock()
		for _, r := range u.refused {
			out = append(out, registry.Refusal{Source: SourcePrefix + u.cfg.Name, Violation: registry.Violation{Tool: r.Tool, Rule: r.Rule, Message: r.Message}})
		}
		u.mu.Unlock()
	}
	return out
}

// Errors returns why each upstream whose contracts could not be read is
// not served, for `toolsvc lint`.
func (s *Set) Errors() []error {
	var errs []error
	for _, u := range s.ups {
		u.mu.Lock()
		if u.loadErr != "" {
			errs = append(errs, errors.New("upstream "+u.cfg.Name+": "+u.loadErr))
		}
		u.mu.Unlock()
	}
	return errs
}
