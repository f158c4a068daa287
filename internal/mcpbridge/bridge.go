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

	"github.com/toolsvc/toolsvc/internal/base/periodic"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/streamhttp"
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

// Bridge is the MCP server. It is safe for concurrent use; Close stops its
// background work.
type Bridge struct {
	// listSlots bounds the tools/list requests served at once; nil: no
	// bound.
	listSlots chan struct{}
	cfg       Config
	log       *slog.Logger
	// guard is the Origin and Host rule of the HTTP endpoint.
	guard   streamhttp.Guard
	catalog atomic.Pointer[catalog]
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

// New builds a Bridge from cfg, its zero settings filled by
// Config.SetDefaults and checked by Config.Validate, its wiring checked
// (checkWiring). It renders
// every tool's MCP description once: the registry is fixed at start-up, so
// the tool set only changes through replaceTools, which sends
// notifications/tools/list_changed. New starts no goroutine: the
// background work (session reaper, fanout listener, task leases) runs in
// Run, which the server runs beside its other jobs.
func New(cfg Config) (*Bridge, error) {
	cfg.SetDefaults()
	if err := errors.Join(cfg.checkWiring(), cfg.Validate()); err != nil {
		return nil, err
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
	b.guard = streamhttp.Guard{PublicURL: cfg.PublicURL, AllowedOrigins: cfg.AllowedOrigins, ForeignHost: cfg.ForeignHost}
	if w, ok := cfg.Registry.(registry.Watched); ok {
		b.unwatchRegistry = w.Watch(func(reg *registry.Registry) {
			if err := b.SetRegistry(reg); err != nil {
				b.log.Error("MCP bridge: tool list not rendered", slog.String("error", err.Error()))
			}
		})
	}
	return b, nil
}

// Close ends every session and subscription, cancels the running tasks
// and waits for them, and ends Run. Safe to call more than
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
	msg := framing.EncodeNotification("notifications/tools/list_changed", struct{}{})
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
// tasks leased in the store (Config.Tasks). Nothing else starts it: a
// Bridge whose Run is never called serves requests, but its idle sessions
// and finished tasks are not expired.
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
	periodic.Run(ctx, time.Minute, b.reap)
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
