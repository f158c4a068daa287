package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/lib/loopback"
	"github.com/toolsvc/toolsvc/internal/lib/redact"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/store/auditlog"
)

// Config is everything `toolsvc serve` (and `toolsvc mcp`) can be told.
// Fill it, call Complete once, then New.
type Config struct {
	// GRPCAddr is the gRPC listen address. Default 127.0.0.1:9090.
	GRPCAddr string
	// HTTPAddr is the HTTP listen address (REST, MCP, health, metrics).
	// Default 127.0.0.1:8080. Empty after Complete only if DisableHTTP.
	HTTPAddr string
	// MetricsAddr, when set, serves /metrics without a credential on a
	// listener of its own, which the operator binds to an address only the
	// scraper reaches. /metrics on HTTPAddr needs a credential holding
	// metrics:read either way. Empty (the default): no such listener.
	MetricsAddr string
	// DisableHTTP serves gRPC only (the stdio MCP server needs no listener).
	DisableHTTP bool
	// DisableGRPC serves no network gRPC listener.
	DisableGRPC bool
	// DB is the store: a SQLite file path or a postgres:// URL. Empty
	// means DefaultDBPath: a per-user data file, so that an installed
	// binary opens the same database from any working directory.
	DB string
	// KnowledgeDir is the directory of knowledge items. Empty means
	// DefaultKnowledgeDir (examples/knowledge, relative to the working
	// directory: the repository's examples), which may be missing (a
	// warning and an empty knowledge set); a directory the operator named
	// must exist.
	KnowledgeDir string
	// knowledgeDirDefaulted records that Complete chose KnowledgeDir.
	knowledgeDirDefaulted bool
	// KnowledgeCompanyWide publishes the items of KnowledgeDir's
	// company-wide/ directory to every tenant. Default false: publishing to
	// every tenant is an operator's explicit decision.
	KnowledgeCompanyWide bool
	// KnowledgeRefreshInterval is how often a replica asks the store
	// whether another replica published a newer knowledge set (the
	// fallback when no Redis nudge arrives); 0 means the default (5s),
	// negative turns sharing off: each replica reloads on its own sync only.
	KnowledgeRefreshInterval time.Duration
	// SyncInterval runs sync-knowledge for every tenant of the deployment
	// this often, as the system actor; 0 (the default) syncs only when a
	// caller asks.
	SyncInterval time.Duration
	// AuthFile is the API key and JWT configuration. Empty means
	// development mode: an anonymous principal with every permission.
	AuthFile string
	// InsecureAllowAnonymous lets development mode bind non-loopback
	// addresses. Default false: it refuses.
	InsecureAllowAnonymous bool
	// Redis, when set (redis://...), shares rate limits and the result
	// cache between replicas.
	Redis string
	// RedisKeyPrefix starts the Redis keys and channels of MCP sessions
	// and the fleet's MCP messages (<prefix>mcp:session:<id>,
	// <prefix>mcp:owner:<hash>, channel <prefix>mcp:events). Replicas of
	// one fleet share it; two fleets on one Redis need two. Default
	// "toolsvc:".
	RedisKeyPrefix string
	// RedisTimeout bounds every rate-limit and cache call to Redis; past
	// it the failure policy decides. Default 250ms.
	RedisTimeout time.Duration
	// RateLimitFailOpen admits calls when Redis is unreachable; the default
	// (false) refuses them, which is safer for a shared budget.
	RateLimitFailOpen bool
	// RateLimitCeiling is the per-principal limit over all tools per minute;
	// 0 disables it. Default 6000.
	RateLimitCeiling int
	// CacheBytes bounds the in-memory result cache. Default 64 MiB.
	CacheBytes int64
	// Deadlines per response_time class. Default fast 2s, medium 10s, slow 60s.
	Deadlines interceptors.Deadlines
	// ShutdownGrace is how long graceful shutdown waits for in-flight
	// calls before it stops hard. Default 10s.
	ShutdownGrace time.Duration
	// ShutdownDrain is how long, on SIGTERM (or when Run's context ends),
	// /readyz answers 503 while everything else keeps serving, before the
	// listeners close and in-flight calls drain (ShutdownGrace): the time a
	// load balancer needs to see the replica unready and stop sending it
	// new calls. Default 0, which suits one process on loopback; behind a
	// balancer set it above the balancer's health-check interval times its
	// fall count (e.g. 10s for Kubernetes' default readiness probe period
	// of 10s, or HAProxy's inter 2s fall 3 → 6s+).
	ShutdownDrain time.Duration
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string
	// LogFormat is json or text. Default json.
	LogFormat string
	// OTLPEndpoint exports traces over OTLP/HTTP when set (off by default).
	OTLPEndpoint string
	// EmbeddingsURL is an OpenAI-compatible /v1/embeddings endpoint; when
	// set, memory search is hybrid (vector + full-text).
	EmbeddingsURL string
	// EmbeddingsModel is the model name sent to the embeddings endpoint.
	EmbeddingsModel string
	// EmbeddingsModelDir is a static embedding model in the model2vec
	// format (tokenizer.json, model.safetensors) to embed with offline, in
	// process, instead of an endpoint; when set, memory search is hybrid.
	EmbeddingsModelDir string
	// VectorSyncInterval is how often, with embeddings on PostgreSQL, the
	// memory vector index reads the store's feed of vector changes, so
	// that memories written through other replicas are found by meaning
	// here too. Default 2s; 0 turns the feed off (one replica).
	VectorSyncInterval time.Duration
	// MaxRequestBytes bounds request bodies on HTTP transports and gRPC
	// messages. Default 4 MiB.
	MaxRequestBytes int
	// MaxInFlight bounds concurrent tool calls over every transport; calls
	// beyond it wait up to ShedWait for a slot, then are shed with
	// RATE_LIMITED (reason "overloaded").
	// 0 means interceptors.DefaultMaxInFlight (32 per CPU, at least 64);
	// negative disables.
	MaxInFlight int
	// ShedWait is how long a call beyond MaxInFlight waits for a slot (in a
	// line of at most MaxInFlight calls). 0 means
	// interceptors.DefaultShedWait (200 ms); negative sheds at once.
	ShedWait time.Duration
	// IdempotencyTTL is how long the result of a call made with an
	// idempotency key answers its repeats. 0 means
	// interceptors.DefaultIdempotencyTTL (24 h).
	IdempotencyTTL time.Duration
	// ListStatsInterval is how often the pressure line is logged (the
	// interval's call count, errors and p50/p95/p99/max latency, and the
	// tool list's requests, hit rate, builds, build failures, average and
	// maximum build time); 0 means 60 s, negative never.
	ListStatsInterval time.Duration
	// ToolMetadataHeaders are the request headers copied into every
	// call's ToolContext metadata (default none). A credential header
	// (authorization, cookie, x-api-key, ...) is refused by Complete.
	ToolMetadataHeaders []string
	// MaxJSONDepth bounds how deeply free-form JSON arguments may nest.
	// 0 means interceptors.DefaultMaxJSONDepth (32).
	MaxJSONDepth int
	// CORSOrigins are the browser origins allowed to call the REST API
	// (none by default).
	CORSOrigins []string
	// CORSAllowCredentials lets browsers send credentials (cookies, HTTP
	// auth) on cross-origin REST calls. Default false; refused together
	// with the origin "*".
	CORSAllowCredentials bool
	// MCPAllowedOrigins are the Origin values the MCP endpoint accepts
	// besides same-host loopback origins (DNS-rebinding protection).
	MCPAllowedOrigins []string
	// MCPStateless serves MCP without sessions, so any replica can answer.
	MCPStateless bool
	// MCPSessionsPerPrincipal bounds the open MCP sessions of one
	// principal (0: mcpbridge's default, 1,024).
	MCPSessionsPerPrincipal int
	// MCPListenersPerPrincipal bounds the open subscriptions/listen
	// streams (MCP 2026-07-28) of one principal; a new one beyond it ends
	// the oldest, answered. 0: mcpbridge's default, 16.
	MCPListenersPerPrincipal int
	// MCPTasksPerPrincipal bounds the MCP tasks (Tasks extension) one
	// principal holds, running or finished. 0: mcpbridge's default, 16.
	MCPTasksPerPrincipal int
	// MCPTaskTTL is how long an MCP task and its result are kept from its
	// creation. 0: mcpbridge's default, 1h. Tasks live in the store: they
	// survive a restart and every replica of the database answers for them.
	MCPTaskTTL time.Duration
	// MCPTaskLease is how long a running task's replica may go without
	// renewing it (it renews every fifth of it) before any replica marks
	// the task failed, retryably, as lost with its replica. 0: mcpbridge's
	// default, 15s.
	MCPTaskLease time.Duration
	// MCPPageSize is the number of tools per MCP tools/list page. Default
	// 100.
	MCPPageSize int
	// MCPListDescriptionMaxChars caps tool descriptions in tools/list at a
	// word boundary with an ellipsis; 0 (the default) lists them whole.
	MCPListDescriptionMaxChars int
	// MCPListStripSchemaMetadata drops documentation keys from the input
	// schemas of tools/list. Default false: the full contract.
	MCPListStripSchemaMetadata bool
	// MCPListFullSchemas lists every tool's input and output schemas whole
	// in tools/list (the result envelope written out in each tool). Default
	// false: the abridged outputSchema, whole at the resource
	// toolsvc://tools/{name}/output-schema (docs/MCP.md).
	MCPListFullSchemas bool
	// MCPListTTL is the cache lifetime tools/list results advertise
	// (ttlMs). Default 60s.
	MCPListTTL time.Duration
	// MCPListMaxInFlight bounds the tools/list requests served at once;
	// more wait for a slot. Default 90; negative: no bound.
	MCPListMaxInFlight int
	// MCPBatchMaxMessages bounds the messages of one MCP JSON-RPC batch
	// (revision 2025-03-26); a longer one is refused whole. Default 100.
	MCPBatchMaxMessages int
	// MCPBatchMaxAnswerBytes bounds the answer of one MCP batch; the
	// requests after it is reached are answered, unrun, with a retryable
	// error. Default 8 MiB.
	MCPBatchMaxAnswerBytes int
	// AuthorizationServers are listed in the OAuth protected resource
	// metadata for MCP clients.
	AuthorizationServers []string
	// AuditFailure is what calls meet while the audit store fails:
	// "closed" (the default) refuses them with a retryable error, "open"
	// serves them, counted (toolsvc_audit_unaudited_total) and logged.
	AuditFailure string
	// AuditRetention prunes audit records older than it in the background,
	// in bounded batches; 0 (the default) keeps everything.
	AuditRetention time.Duration
	// PublicURL is this service's external base URL (used in OAuth
	// metadata); default http://HTTPAddr, or https://HTTPAddr with TLS.
	PublicURL string
	// IdentityKeyRotation is how long one key signs the assertions of the
	// caller sent to upstreams (docs/OPERATIONS.md, "Identity of callers
	// to upstreams"); the next key is published a period ahead. Default
	// 24h.
	IdentityKeyRotation time.Duration
	// CredentialKeys are the operator's keys that seal callers' own
	// credentials for upstreams, "id:base64 of 32 bytes", the first
	// sealing new ones and every one opening the stored ones (rotate by
	// putting a new key first). Empty: no upstream may need a caller's
	// credential.
	CredentialKeys []string
	// TLSCert and TLSKey are PEM files of the certificate (with its
	// intermediates) and private key both listeners serve TLS with. Both
	// or neither; re-read when they change, without a restart.
	TLSCert, TLSKey string
	// TLSClientCA is a PEM file of the CAs whose client certificates are
	// accepted: it turns on mutual TLS on both listeners (every client
	// must present a certificate they signed), and a certificate
	// authenticates as the auth file's client_certs entry it matches.
	TLSClientCA string
	// UpstreamsFile lists upstream gRPC services and MCP servers whose
	// tools toolsvc serves behind the same chain (package upstream).
	// Empty: none. It is read again on SIGHUP and when it changes.
	UpstreamsFile string
	// UpstreamApprovalsInterval is how often approvals of upstream tool
	// definitions made on another replica are read from the store
	// (docs/MCP.md, "Pinned definitions"). Default 10s.
	UpstreamApprovalsInterval time.Duration
	// UpstreamsPoll is how often the upstreams file's modification time is
	// checked, to read it again when it changed; 0 means 5 seconds,
	// negative never (SIGHUP still reloads it).
	UpstreamsPoll time.Duration
	// AuthPoll is how often the auth file's modification time is checked,
	// to read it again when it changed (docs/OPERATIONS.md "Reloading");
	// 0 means 2 seconds, negative never (SIGHUP still reloads it).
	AuthPoll time.Duration
	// MaxResultBytes bounds every tool result, in bytes of its protobuf
	// encoding (docs/OPERATIONS.md "Result caps"); 0 means 4 MiB,
	// negative no global cap (per-tool and per-upstream caps still apply).
	MaxResultBytes int
	// ToolMaxResultBytes are per-tool result caps by tool name; the
	// smaller of a tool's cap and MaxResultBytes applies.
	ToolMaxResultBytes map[string]int
}

// ParseToolCaps parses "tool=bytes" entries into per-tool result caps.
func ParseToolCaps(entries []string) (map[string]int, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	out := make(map[string]int, len(entries))
	for _, e := range entries {
		name, v, ok := strings.Cut(e, "=")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if !ok || strings.TrimSpace(name) == "" || err != nil || n <= 0 {
			return nil, fmt.Errorf("%q: want tool=bytes with a positive number of bytes", e)
		}
		out[strings.TrimSpace(name)] = n
	}
	return out, nil
}

// TLS reports whether the listeners serve TLS.
func (c *Config) TLS() bool { return c.TLSCert != "" }

// Defaults is the configuration toolsvc runs with when nothing is said. It
// is the one place defaults live: the flags take their defaults from it (and
// so do the environment and the YAML file, which set flags), embedders and
// tests start from it, and Complete fills only what has no meaning at zero.
func Defaults() Config {
	return Config{
		GRPCAddr:                 "127.0.0.1:9090",
		HTTPAddr:                 "127.0.0.1:8080",
		KnowledgeRefreshInterval: 5 * time.Second,
		RedisTimeout:             250 * time.Millisecond,
		RedisKeyPrefix:           "toolsvc:",
		RateLimitCeiling:         6000,
		CacheBytes:               64 << 20,
		Deadlines:                interceptors.DefaultDeadlines,
		ShutdownGrace:            10 * time.Second,
		IdentityKeyRotation:      24 * time.Hour,
		LogLevel:                 "info",
		LogFormat:                "json",
		EmbeddingsModel:          "text-embedding-3-small",
		VectorSyncInterval:       2 * time.Second,
		MaxRequestBytes:          4 << 20,
		MaxJSONDepth:             interceptors.DefaultMaxJSONDepth,
		MCPSessionsPerPrincipal:  1024,
		AuditFailure:             "closed",
		ListStatsInterval:        60 * time.Second,
		MCPListTTL:               mcpbridge.DefaultListTTL,
		MCPListMaxInFlight:       mcpbridge.DefaultListMaxInFlight,
		MCPBatchMaxMessages:      mcpbridge.DefaultBatchMaxMessages,
		MCPBatchMaxAnswerBytes:   mcpbridge.DefaultBatchMaxAnswerBytes,
		IdempotencyTTL:           interceptors.DefaultIdempotencyTTL,
		UpstreamsPoll:            5 * time.Second,
		AuthPoll:                 2 * time.Second,
		MaxResultBytes:           4 << 20,

		// MCP 2026-07-28: subscriptions/listen and the Tasks extension.
		MCPListenersPerPrincipal: 16,
		MCPTasksPerPrincipal:     16,
		MCPTaskTTL:               time.Hour,
		MCPTaskLease:             15 * time.Second,
	}
}

// Complete fills the defaults of fields whose zero value means nothing (an
// empty address, a zero size or duration) and validates the configuration.
// A field whose zero is documented to mean something (RateLimitCeiling 0
// disables the ceiling; MaxInFlight and ShedWait 0 choose the chain's
// default) is left as given: start from Defaults to get its default.
//
// Every rule between flags lives here, so that a configuration New accepts
// is one Complete accepted: New only fails on what it acquires (files,
// connections, the registry's checks).
func (c *Config) Complete() error {
	d := Defaults()
	if _, err := wire.NewMetadataHeaders(c.ToolMetadataHeaders); err != nil {
		return fmt.Errorf("tool metadata headers: %w", err)
	}
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&c.GRPCAddr, d.GRPCAddr)
	if !c.DisableHTTP {
		def(&c.HTTPAddr, d.HTTPAddr)
	}
	var errs []error
	if c.DB == "" {
		db, err := DefaultDBPath()
		if err != nil {
			errs = append(errs, err)
		}
		c.DB = db
	}
	if c.KnowledgeDir == "" {
		c.KnowledgeDir, c.knowledgeDirDefaulted = DefaultKnowledgeDir, true
	}
	def(&c.LogLevel, d.LogLevel)
	def(&c.LogFormat, d.LogFormat)
	def(&c.EmbeddingsModel, d.EmbeddingsModel)
	if c.CacheBytes == 0 {
		c.CacheBytes = d.CacheBytes
	}
	if c.RedisKeyPrefix == "" {
		c.RedisKeyPrefix = d.RedisKeyPrefix
	}
	if c.RedisTimeout == 0 {
		c.RedisTimeout = d.RedisTimeout
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = d.ShutdownGrace
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = d.MaxRequestBytes
	}
	if c.ListStatsInterval == 0 {
		c.ListStatsInterval = d.ListStatsInterval
	}
	if c.UpstreamsPoll == 0 {
		c.UpstreamsPoll = d.UpstreamsPoll
	}
	if c.AuthPoll == 0 {
		c.AuthPoll = d.AuthPoll
	}
	if c.IdentityKeyRotation == 0 {
		c.IdentityKeyRotation = d.IdentityKeyRotation
	}
	if c.MaxResultBytes == 0 {
		c.MaxResultBytes = d.MaxResultBytes
	}
	if c.KnowledgeRefreshInterval == 0 {
		c.KnowledgeRefreshInterval = d.KnowledgeRefreshInterval
	}
	if c.Deadlines == (interceptors.Deadlines{}) {
		c.Deadlines = d.Deadlines
	}
	if c.ShutdownDrain < 0 {
		errs = append(errs, fmt.Errorf("shutdown drain %s: want 0 (none) or a positive duration", c.ShutdownDrain))
	}
	if c.ShutdownGrace < 0 {
		errs = append(errs, fmt.Errorf("shutdown grace %s: want a positive duration", c.ShutdownGrace))
	}
	if c.EmbeddingsURL != "" && c.EmbeddingsModelDir != "" {
		errs = append(errs, errors.New("--embeddings-url and --embeddings-model-dir conflict: embed with an endpoint or an offline model, not both"))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together: give both or neither"))
	}
	if c.TLSClientCA != "" {
		if c.TLSCert == "" {
			errs = append(errs, errNoTLS)
		}
		if c.AuthFile == "" {
			errs = append(errs, errors.New("--tls-client-ca needs --auth-file: client certificates authenticate as its client_certs entries"))
		}
	}
	if c.PublicURL == "" && c.HTTPAddr != "" {
		scheme := "http://"
		if c.TLS() {
			scheme = "https://"
		}
		c.PublicURL = scheme + c.HTTPAddr
	}
	if c.SyncInterval < 0 {
		errs = append(errs, fmt.Errorf("sync interval %s: want 0 (manual, the default) or a positive duration", c.SyncInterval))
	}
	if c.MCPListDescriptionMaxChars < 0 {
		errs = append(errs, fmt.Errorf("MCP list description max chars %d: want 0 (whole descriptions) or more", c.MCPListDescriptionMaxChars))
	}
	if c.MCPBatchMaxMessages < 0 {
		errs = append(errs, fmt.Errorf("MCP batch max messages %d: want 0 (the default, %d) or more", c.MCPBatchMaxMessages, mcpbridge.DefaultBatchMaxMessages))
	}
	if c.MCPBatchMaxAnswerBytes < 0 {
		errs = append(errs, fmt.Errorf("MCP batch max answer bytes %d: want 0 (the default, %d) or more", c.MCPBatchMaxAnswerBytes, mcpbridge.DefaultBatchMaxAnswerBytes))
	}
	if c.MCPListTTL < 0 {
		errs = append(errs, fmt.Errorf("MCP list TTL %s: want a positive duration", c.MCPListTTL))
	}
	if c.IdempotencyTTL < 0 {
		errs = append(errs, fmt.Errorf("idempotency TTL %s: want 0 (the default, 24h) or more", c.IdempotencyTTL))
	}
	if c.RateLimitCeiling < 0 {
		errs = append(errs, fmt.Errorf("rate limit ceiling %d: want 0 (disabled) or more calls per minute", c.RateLimitCeiling))
	}
	if c.CacheBytes < 0 {
		errs = append(errs, fmt.Errorf("cache bytes %d: want a positive size", c.CacheBytes))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log level %q: want debug, info, warn or error", c.LogLevel))
	}
	switch c.LogFormat {
	case "json", "text":
	default:
		errs = append(errs, fmt.Errorf("log format %q: want json or text", c.LogFormat))
	}
	if _, err := auditlog.ParseFailure(c.AuditFailure); err != nil {
		errs = append(errs, err)
	}
	if c.VectorSyncInterval < 0 {
		errs = append(errs, fmt.Errorf("vector sync interval %s: want 0 (off) or a positive duration", c.VectorSyncInterval))
	}
	if c.AuditRetention < 0 {
		errs = append(errs, fmt.Errorf("audit retention %s: want 0 (keep everything) or a positive duration", c.AuditRetention))
	}
	if c.Redis != "" && !strings.HasPrefix(c.Redis, "redis://") && !strings.HasPrefix(c.Redis, "rediss://") {
		errs = append(errs, fmt.Errorf("redis %q: want a redis:// or rediss:// URL", redact.URL(c.Redis)))
	}
	if err := c.cors().Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.AuthFile == "" && !c.InsecureAllowAnonymous {
		for _, a := range []string{c.GRPCAddr, c.HTTPAddr} {
			if a != "" && !c.addrDisabled(a) && !loopback.Addr(a) {
				errs = append(errs, fmt.Errorf("development mode (no --auth-file) refuses to listen on %s: bind a loopback address, give --auth-file, or pass --insecure-allow-anonymous", a))
			}
		}
	}
	return errors.Join(errs...)
}

// DefaultKnowledgeDir is the knowledge directory when none is named: the
// repository's examples, relative to the working directory.
const DefaultKnowledgeDir = "examples/knowledge"

// DefaultDBPath is the SQLite database when --db is not given:
// $XDG_DATA_HOME/toolsvc/toolsvc.db, else ~/.local/share/toolsvc/toolsvc.db
// (the XDG base directory default). It never depends on the working
// directory, so an installed binary started from anywhere (a desktop
// agent starts it from its own directory) finds the same data.
func DefaultDBPath() (string, error) {
	if x := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "toolsvc", "toolsvc.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", errors.New("no default database: neither $XDG_DATA_HOME nor $HOME is set; give --db")
	}
	return filepath.Join(home, ".local", "share", "toolsvc", "toolsvc.db"), nil
}

// KnowledgeDirOptional reports whether KnowledgeDir was chosen by Complete
// (not named by the operator), so that its absence is a warning and an
// empty knowledge set rather than an error.
func (c *Config) KnowledgeDirOptional() bool { return c.knowledgeDirDefaulted }

func (c *Config) addrDisabled(a string) bool {
	return (a == c.GRPCAddr && c.DisableGRPC) || (a == c.HTTPAddr && c.DisableHTTP)
}
