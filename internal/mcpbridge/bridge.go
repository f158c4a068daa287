package mcpbridge

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/lib/every"
)

// Protocol revisions the bridge negotiates, newest first.
const (
	Revision20251125 = "2025-11-25"
	Revision20250618 = "2025-06-18"
	Revision20250326 = "2025-03-26"
)

// _meta keys of revision 2026-07-28: every request carries its revision,
// client and capabilities, every result the server's identity.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// LatestRevision is what the bridge offers a client asking for a revision it
// does not know.
const LatestRevision = Revision20251125

var revisions = []string{Revision20251125, Revision20250618, Revision20250326}

// SupportedRevision reports whether the bridge speaks revision v.
func SupportedRevision(v string) bool { return slices.Contains(revisions, v) }

// Config is what a Bridge is built from. Registry, Channel and Auth are
// required; every other field has the default its comment states.
type Config struct {
	// Registry holds the tool registry (tools/list, name lookup): a
	// *registry.Registry, or a registry.Watched (*registry.Live) whose
	// every change the bridge serves as SetRegistry does.
	Registry registry.Snapshots
	// Channel is the in-process channel of the gRPC server: every call
	// passes the server's interceptor chain through it.
	Channel grpc.ClientConnInterface
	// Auth is the server's authenticator. The bridge uses it only to bind
	// sessions to a principal and to answer HTTP 401 with the protected
	// resource metadata; listings and calls are authenticated, decided and
	// audited by the chain.
	Auth *auth.Authenticator
	// AuthFailed is told of every credential the bridge refuses with HTTP
	// 401 before a call reaches the chain, so that failed authentications
	// are counted (and logged at a bounded rate) on MCP as on every
	// transport. Default: none.
	AuthFailed func(error)
	// Logger receives the bridge's own logs. Default: discarded.
	Logger *slog.Logger
	// Name and Version are the serverInfo of initialize. Default "toolsvc"
	// and "dev".
	Name, Version string
	// PageSize is the number of tools per tools/list page, at most 1,000.
	// Default 100.
	PageSize int
	// Stateless issues no Mcp-Session-Id and accepts any request, so any
	// replica behind a load balancer can answer. Default false (sessions).
	Stateless bool
	// AllowedOrigins are Origin values accepted besides loopback origins
	// (when the request's Host is loopback too). Default none.
	AllowedOrigins []string
	// MaxRequestBytes bounds a request body. Default 4 MiB.
	MaxRequestBytes int64
	// BatchMaxMessages bounds the messages of one JSON-RPC batch
	// (revision 2025-03-26 only): a longer batch is refused whole, before
	// any of it runs, with -32600 naming the limit. Default 100
	// (DefaultBatchMaxMessages).
	BatchMaxMessages int
	// BatchMaxAnswerBytes bounds the answer of one batch: once the answers
	// so far reach it, the batch's remaining requests are not run and each
	// is answered with CodeBatchAnswerFull (retryable), so an answer holds
	// at most this much plus the one message that crossed it. Default 8 MiB
	// (DefaultBatchMaxAnswerBytes).
	BatchMaxAnswerBytes int
	// PublicURL is the service's external base URL, named in the OAuth
	// protected resource metadata. Default derived from the request.
	PublicURL string
	// AuthorizationServers are listed in the protected resource metadata.
	AuthorizationServers []string
	// SessionIdle ends sessions unused for this long. Default 30m.
	SessionIdle time.Duration
	// SessionsPerPrincipal bounds the open sessions of one principal: a
	// new one beyond it ends that principal's least recently used session
	// (idle ones first), whose client then gets 404 and initializes again,
	// as the MCP specification has clients do. Default 1,024: one API key
	// may serve many agents' conversations at once.
	SessionsPerPrincipal int
	// StreamLifetime bounds a GET event stream; the client reconnects.
	// Default 5m.
	StreamLifetime time.Duration
	// KeepAlive is the interval of comment lines on event streams.
	// Default 15s.
	KeepAlive time.Duration
	// ListDescriptionMaxChars caps each tool's description in tools/list
	// at a word boundary, with an ellipsis, after normalising its white
	// space (description compaction, docs/MCP.md). Default 0: the full description.
	ListDescriptionMaxChars int
	// ListStripSchemaMetadata drops documentation keys (description,
	// examples, example, title, default, $comment, markdownDescription)
	// from every inputSchema and outputSchema of tools/list, at every
	// depth (property names stay). Default false:
	// the full contract.
	ListStripSchemaMetadata bool
	// ListFullSchemas lists every tool's inputSchema and outputSchema
	// whole: the result envelope (agentHints, metadata, the ToolError) and
	// every description written out in each tool, about 20 KB per tool.
	// Default false: the abridged outputSchema (outputschema.go), the same
	// contract without the envelope's detail and the documentation, which
	// resources/read of toolsvc://tools/{name}/output-schema returns whole.
	ListFullSchemas bool
	// ListTTL is the cache lifetime tools/list results advertise to
	// clients (ttlMs). Default 60s.
	ListTTL time.Duration
	// ListMaxInFlight bounds the tools/list requests served at once; one
	// beyond it waits for a slot while its request lasts. Default 90;
	// negative: no bound.
	ListMaxInFlight int
	// ListenersPerPrincipal bounds the open subscriptions/listen streams
	// of one principal: a new one beyond it ends the principal's oldest
	// one gracefully. Default 16.
	ListenersPerPrincipal int
	// TasksPerPrincipal bounds the tasks (Tasks extension) one principal
	// holds, running or kept for their result: a new one beyond it drops
	// the principal's oldest finished task, and when all of them are
	// still running the call is answered without a task. Default 16.
	TasksPerPrincipal int
	// TaskTTL is how long a task and its result are kept from its
	// creation; tasks/get then answers as for an unknown task. Default 1h.
	TaskTTL time.Duration
	// Sessions shares the sessions of stateful HTTP with the other
	// replicas of a fleet (sessionshare.go). Default nil: the sessions live
	// in this process and another replica answers 404 for them.
	Sessions SessionRegistry
	// Fanout tells the other replicas what changed: sessions ended, log
	// levels set, the tool set replaced. Default nil: nobody else hears.
	Fanout Fanout
	// SessionRecheck is how long a shared session confirmed by the
	// registry is served from this replica's memory before the registry is
	// asked again (which also keeps it alive there). Fanout messages end
	// cached sessions at once; the recheck bounds how long one lost
	// message matters. Default 5s.
	SessionRecheck time.Duration
	// ReplicaID names this replica to the fleet (fanout messages, task
	// leases). Default a random id per process.
	ReplicaID string
	// Tasks keeps tasks in the store, where every replica and a restarted
	// one find them (tasks.go). Default nil: in this process's memory.
	Tasks TaskStore
	// TaskLease is how long a task's replica may go without renewing its
	// lease before another replica fails the task as lost. Default 15s;
	// the lease is renewed every TaskLease/5.
	TaskLease time.Duration
	// MetadataHeaders are the request headers copied into every call's
	// ToolContext.metadata. Default none.
	MetadataHeaders wire.MetadataHeaders
	// Manual makes New start no background work (the session reaper, the
	// fleet's fanout listener, the task leases): the caller runs
	// Bridge.Run, as a server whose background work is started by its
	// Run, never by its constructor. Default false: New starts it and
	// Close stops it.
	Manual bool
}

// Defaults of the tools/list configuration.
const (
	DefaultListTTL         = 60 * time.Second
	DefaultListMaxInFlight = 90
)

// Defaults of the batch bounds (batch.go says why these figures).
const (
	DefaultBatchMaxMessages    = 100
	DefaultBatchMaxAnswerBytes = 8 << 20
)

// Bridge is the MCP server. It is safe for concurrent use; Close stops its
// background work.
type Bridge struct {
	// listSlots bounds the tools/list requests served at once; nil: no
	// bound.
	listSlots chan struct{}
	cfg       Config
	log       *slog.Logger
	catalog   atomic.Pointer[catalog]
	// unwatchRegistry ends the watch of Config.Registry (nil: a fixed registry).
	unwatchRegistry func()
	// stdio are the peers of running ServeStdio loops, told when the tool
	// set changes.
	stdio    sync.Map // *peer → struct{}
	sessions *sessionStore
	// inflight holds the cancel functions of running requests of stateless
	// peers, by principal and request id, for notifications/cancelled.
	inflight sync.Map
	// suffixes are the rendered modern result suffixes (suffixKey →
	// []byte), see modernSuffix.
	suffixes sync.Map
	// listeners are the open subscriptions/listen streams (listen.go).
	listeners *listenerSet
	// watchers are the clients' resource subscriptions (subscribe.go).
	watchers *watchers
	// tasks are the tasks of the Tasks extension (tasks.go).
	tasks *taskStore
	// replica is Config.ReplicaID.
	replica string
	// questions are the questions sent to 2025-era clients and not yet
	// answered, by request id (ask.go); calls are the 2026-07-28 calls
	// waiting for a follow-up, by call id, and relays the follow-ups
	// this replica forwarded to another, by relay id (mrtr.go).
	questions sync.Map
	calls     sync.Map
	relays    sync.Map
	// draining is closed by EndSubscriptions.
	draining  chan struct{}
	drainOnce sync.Once
	stop      chan struct{}
	wg        sync.WaitGroup
	once      sync.Once
	// hooks let tests act at chosen points (export_test.go); nil
	// otherwise.
	hooks atomic.Pointer[hooks]
}

// hooks are the points where tests force an interleaving.
type hooks struct {
	// admitted is called when the registry has admitted a session, before
	// this replica's cache knows it.
	admitted func(id string)
	// heard is called after a fanout message has been applied.
	heard func(msg string)
}

// catalog is the tool set the bridge renders and the channel its listings
// come from, replaced together when the set changes.
type catalog struct {
	tools *toolIndex
	// pages are the rendered tools/list pages of tools.
	pages *pageMemo
	// listing answers ListTools; nil is the configured Channel (tests that
	// grow the tool set beyond the registry give their own).
	listing grpc.ClientConnInterface
	channel grpc.ClientConnInterface
}

// lister is the channel tools/list asks ToolService.ListTools on.
func (c *catalog) lister() grpc.ClientConnInterface {
	if c.listing != nil {
		return c.listing
	}
	return c.channel
}

// New builds a Bridge. It renders every tool's MCP description once: the
// registry is fixed at start-up, so the tool set only changes through
// replaceTools, which sends notifications/tools/list_changed.
func New(cfg Config) (*Bridge, error) {
	if cfg.Registry == nil || cfg.Channel == nil || cfg.Auth == nil {
		return nil, errors.New("mcpbridge: Registry, Channel and Auth are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Name == "" {
		cfg.Name = "toolsvc"
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 100
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = 4 << 20
	}
	if cfg.BatchMaxMessages <= 0 {
		cfg.BatchMaxMessages = DefaultBatchMaxMessages
	}
	if cfg.BatchMaxAnswerBytes <= 0 {
		cfg.BatchMaxAnswerBytes = DefaultBatchMaxAnswerBytes
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 30 * time.Minute
	}
	if cfg.SessionsPerPrincipal <= 0 {
		cfg.SessionsPerPrincipal = 1024
	}
	if cfg.StreamLifetime <= 0 {
		cfg.StreamLifetime = 5 * time.Minute
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.ListTTL <= 0 {
		cfg.ListTTL = DefaultListTTL
	}
	if cfg.ListMaxInFlight == 0 {
		cfg.ListMaxInFlight = DefaultListMaxInFlight
	}
	if cfg.ListenersPerPrincipal <= 0 {
		cfg.ListenersPerPrincipal = 16
	}
	if cfg.TasksPerPrincipal <= 0 {
		cfg.TasksPerPrincipal = 16
	}
	if cfg.TaskTTL <= 0 {
		cfg.TaskTTL = time.Hour
	}
	if cfg.SessionRecheck <= 0 {
		cfg.SessionRecheck = 5 * time.Second
	}
	if cfg.ReplicaID == "" {
		cfg.ReplicaID = newSessionID()[:12]
	}
	if cfg.TaskLease <= 0 {
		cfg.TaskLease = 15 * time.Second
	}
	idx, err := newToolIndex(cfg.Registry.Load(), compaction{descMax: cfg.ListDescriptionMaxChars, stripSchema: cfg.ListStripSchemaMetadata, fullSchemas: cfg.ListFullSchemas})
	if err != nil {
		return nil, err
	}
	b := &Bridge{cfg: cfg, log: cfg.Logger, stop: make(chan struct{}), draining: make(chan struct{}),
		listeners: newListenerSet(cfg.ListenersPerPrincipal), watchers: newWatchers(), tasks: newTaskStore(cfg.TasksPerPrincipal, cfg.TaskTTL)}
	if cfg.ListMaxInFlight > 0 {
		b.listSlots = make(chan struct{}, cfg.ListMaxInFlight)
	}
	b.catalog.Store(&catalog{tools: idx, pages: newPageMemo(), channel: cfg.Channel})
	b.sessions = newSessionStore(cfg.SessionIdle, cfg.SessionsPerPrincipal)
	b.replica = cfg.ReplicaID
	if w, ok := cfg.Registry.(registry.Watched); ok {
		b.unwatchRegistry = w.Watch(func(reg *registry.Registry) {
			if err := b.SetRegistry(reg); err != nil {
				b.log.Error("MCP bridge: tool list not rendered", slog.String("error", err.Error()))
			}
		})
	}
	if !cfg.Manual {
		ctx, cancel := context.WithCancel(context.Background())
		b.wg.Add(2)
		go func() { defer b.wg.Done(); <-b.stop; cancel() }()
		go func() { defer b.wg.Done(); b.Run(ctx) }()
	}
	return b, nil
}

// Close ends every session and subscription, cancels the running tasks
// and waits for them, and stops the session reaper. Safe to call more than
// once.
func (b *Bridge) Close() {
	b.once.Do(func() {
		if b.unwatchRegistry != nil {
			b.unwatchRegistry()
		}
		close(b.stop)
		b.wg.Wait()
		b.sessions.closeAll()
		b.tasks.close()
	})
}

// replaceTools serves idx from now on, its listings from listing (nil:
// the configured Channel), and tells every session's event streams and
// every stdio client with notifications/tools/list_changed (capability
// tools.listChanged), and every subscriptions/listen stream that asked
// for toolsListChanged (revision 2026-07-28).
func (b *Bridge) replaceTools(idx *toolIndex, listing grpc.ClientConnInterface) {
	b.catalog.Store(&catalog{tools: idx, pages: newPageMemo(), listing: listing, channel: b.cfg.Channel})
	b.toolsChanged()
	// The other replicas' sessions and listeners hear it too: their
	// clients' next tools/list goes to whichever replica answers.
	b.publish(fanTools + " " + b.replica)
}

// toolsChanged sends notifications/tools/list_changed to this replica's
// sessions' event streams, its initialized stdio clients, and wakes its
// subscriptions/listen streams.
func (b *Bridge) toolsChanged() {
	msg := encodeNotification("notifications/tools/list_changed", struct{}{})
	b.sessions.each(func(p *peer) { p.broadcast(msg) })
	b.stdio.Range(func(k, _ any) bool {
		// Only a client that initialized (2025 era) hears it unasked; a
		// 2026-07-28 client asks with subscriptions/listen.
		if p := k.(*peer); p.negotiated() != "" {
			p.notify(msg)
		}
		return true
	})
	b.listeners.wakeAll()
}

// SetRegistry serves reg's tools from now on: each is rendered once, and
// every session's event streams, every initialized stdio client and every
// subscriptions/listen stream that asked for toolsListChanged hear
// notifications/tools/list_changed. Listings and calls already answering
// finish on the catalog they started with.
func (b *Bridge) SetRegistry(reg *registry.Registry) error {
	idx, err := newToolIndex(reg, compaction{descMax: b.cfg.ListDescriptionMaxChars, stripSchema: b.cfg.ListStripSchemaMetadata, fullSchemas: b.cfg.ListFullSchemas})
	if err != nil {
		return err
	}
	b.replaceTools(idx, nil)
	return nil
}

// Run does the bridge's background work until ctx ends or the bridge
// closes: it expires idle sessions and finished tasks every minute, and in
// a fleet applies the other replicas' messages (Config.Fanout: sessions
// ended, log levels set, the tool set replaced) and keeps this replica's
// tasks leased in the store (Config.Tasks). New runs it unless
// Config.Manual is set.
func (b *Bridge) Run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // the bridge closing ends the work as ctx does
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	if b.cfg.Fanout != nil {
		ready := make(chan struct{})
		wg.Add(1)
		go func() { defer wg.Done(); b.listenFanout(ctx, ready) }()
		// Subscribed before the other work starts, so that a replica that
		// just came up hears what is published from here on; an
		// unreachable Redis delays it by this much at most (the
		// subscription then comes later).
		select {
		case <-ready:
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			b.log.Warn("mcp fanout: not subscribed yet; continuing")
		}
	}
	if b.cfg.Tasks != nil {
		wg.Add(1)
		go func() { defer wg.Done(); b.leaseTasks(ctx) }()
	}
	every.Run(ctx, time.Minute, b.reap)
	wg.Wait()
}

// reap expires idle sessions and finished tasks, and in a fleet purges
// the store's tasks past their TTL.
func (b *Bridge) reap(context.Context) {
	now := time.Now()
	b.sessions.expire(now)
	b.tasks.expire(now)
	if b.cfg.Tasks != nil {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		if _, err := b.cfg.Tasks.PurgeTasks(ctx, now.Add(-b.cfg.TaskTTL)); err != nil {
			b.log.Warn("mcp task purge", slog.String("error", err.Error()))
		}
		cancel()
	}
}
