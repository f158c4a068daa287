package mcpbridge

import (
	"errors"
	"fmt"
	"github.com/toolsvc/toolsvc/internal/base/mcptask"
	"log/slog"
	"net/http"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

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
	// ForeignHost answers a request whose Host the endpoint's guard
	// refuses (neither loopback, nor the public URL's host, nor an allowed
	// origin's); nil: the bridge's own 403. The server sets its own
	// refusal while listening on loopback, where every other route answers
	// so, and leaves the endpoint to this one guard.
	ForeignHost http.Handler
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
	Tasks mcptask.Store
	// TaskLease is how long a task's replica may go without renewing its
	// lease before another replica fails the task as lost. Default 15s;
	// the lease is renewed every TaskLease/5.
	TaskLease time.Duration
	// MetadataHeaders are the request headers copied into every call's
	// ToolContext.metadata. Default none.
	MetadataHeaders wire.MetadataHeaders
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

// Defaults of the fields SetDefaults fills.
const (
	DefaultName                  = "toolsvc"
	DefaultVersion               = "dev"
	DefaultPageSize              = 100
	DefaultMaxRequestBytes       = 4 << 20
	DefaultSessionIdle           = 30 * time.Minute
	DefaultSessionsPerPrincipal  = 1024
	DefaultStreamLifetime        = 5 * time.Minute
	DefaultKeepAlive             = 15 * time.Second
	DefaultListenersPerPrincipal = 16
	DefaultTasksPerPrincipal     = 16
	DefaultTaskTTL               = time.Hour
	DefaultSessionRecheck        = 5 * time.Second
	DefaultTaskLease             = 15 * time.Second
)

// SetDefaults fills every zero setting with the default its comment
// states (ListMaxInFlight's negative, no bound, is not zero and stays). It
// is the one place the bridge's defaults are set; a negative bound is left
// for Validate to name. It touches no wiring (the collaborators, the
// logger, the replica's id: checkWiring), so the server calls it on the
// settings it read before it wires anything.
func (c *Config) SetDefaults() {
	orZero(&c.Name, DefaultName)
	orZero(&c.Version, DefaultVersion)
	orZero(&c.PageSize, DefaultPageSize)
	orZero(&c.MaxRequestBytes, DefaultMaxRequestBytes)
	orZero(&c.BatchMaxMessages, DefaultBatchMaxMessages)
	orZero(&c.BatchMaxAnswerBytes, DefaultBatchMaxAnswerBytes)
	orZero(&c.SessionIdle, DefaultSessionIdle)
	orZero(&c.SessionsPerPrincipal, DefaultSessionsPerPrincipal)
	orZero(&c.StreamLifetime, DefaultStreamLifetime)
	orZero(&c.KeepAlive, DefaultKeepAlive)
	orZero(&c.ListTTL, DefaultListTTL)
	orZero(&c.ListMaxInFlight, DefaultListMaxInFlight)
	orZero(&c.ListenersPerPrincipal, DefaultListenersPerPrincipal)
	orZero(&c.TasksPerPrincipal, DefaultTasksPerPrincipal)
	orZero(&c.TaskTTL, DefaultTaskTTL)
	orZero(&c.SessionRecheck, DefaultSessionRecheck)
	orZero(&c.TaskLease, DefaultTaskLease)
}

// orZero sets *p to v when *p is its type's zero value.
func orZero[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// Validate reports every setting of c that is out of range, by name: a
// negative bound or duration (only ListMaxInFlight may be negative: no
// bound). The wiring is checked by New (checkWiring).
func (c *Config) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"PageSize", int64(c.PageSize)},
		{"MaxRequestBytes", c.MaxRequestBytes},
		{"BatchMaxMessages", int64(c.BatchMaxMessages)},
		{"BatchMaxAnswerBytes", int64(c.BatchMaxAnswerBytes)},
		{"SessionsPerPrincipal", int64(c.SessionsPerPrincipal)},
		{"ListDescriptionMaxChars", int64(c.ListDescriptionMaxChars)},
		{"ListenersPerPrincipal", int64(c.ListenersPerPrincipal)},
		{"TasksPerPrincipal", int64(c.TasksPerPrincipal)},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("mcpbridge: Config.%s %d: want 0 (the default) or more", f.name, f.v))
		}
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"SessionIdle", c.SessionIdle}, {"StreamLifetime", c.StreamLifetime}, {"KeepAlive", c.KeepAlive},
		{"ListTTL", c.ListTTL}, {"TaskTTL", c.TaskTTL}, {"SessionRecheck", c.SessionRecheck}, {"TaskLease", c.TaskLease},
	} {
		if f.d < 0 {
			errs = append(errs, fmt.Errorf("mcpbridge: Config.%s %s: want 0 (the default) or a positive duration", f.name, f.d))
		}
	}
	return errors.Join(errs...)
}

// checkWiring reports every collaborator c lacks (the required Registry,
// Channel and Auth), by name, and gives the optional ones their
// defaults: a Logger that discards, a ReplicaID of its own.
func (c *Config) checkWiring() error {
	var errs []error
	required := func(name string, missing bool) {
		if missing {
			errs = append(errs, fmt.Errorf("mcpbridge: Config.%s is required", name))
		}
	}
	required("Registry", c.Registry == nil)
	required("Channel", c.Channel == nil)
	required("Auth", c.Auth == nil)
	orZero(&c.Logger, slog.New(slog.DiscardHandler))
	if c.ReplicaID == "" {
		c.ReplicaID = newSessionID()[:12]
	}
	return errors.Join(errs...)
}
