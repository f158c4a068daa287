package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/loopback"
	"github.com/toolsvc/toolsvc/internal/base/redact"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/rest/gateway"
	"github.com/toolsvc/toolsvc/internal/store/auditlog"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

// Config is everything `toolsvc serve` (and `toolsvc mcp`) can be told:
// the server's own settings, then each component's Config (MCP, Chain,
// REST). Fill it (start from Defaults), call Complete once, then New.
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
	// messages. Default gateway.DefaultMaxRequestBytes (4 MiB). Complete
	// gives it to the MCP and REST transports (shareSettings).
	MaxRequestBytes int
	// ListStatsInterval is how often the pressure line is logged (the
	// interval's call count, errors and p50/p95/p99/max latency, and the
	// tool list's requests, hit rate, builds, build failures, average and
	// maximum build time); 0 means 60 s, negative never.
	ListStatsInterval time.Duration
	// ToolMetadataHeaders are the request headers copied into every
	// call's ToolContext metadata (default none). A credential header
	// (authorization, cookie, x-api-key, ...) is refused by Complete.
	ToolMetadataHeaders []string
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
	// upstream.DefaultKeyRotation (24h).
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

	// The components' own configurations, each with its defaults and
	// checks (components.go; the flags bind to their fields in
	// cmd/toolsvc). Only their settings are set here: their wiring
	// (registry, channel, authenticator, logger, stores, ToolMetadataHeaders
	// parsed) is filled by New when it builds the component, and the
	// settings above that several components share (MaxRequestBytes,
	// PublicURL, MaxResultBytes, RateLimitCeiling) are copied into them by
	// Complete, which overwrites what was set there.

	// MCP configures the MCP transport (package mcpbridge): sessions,
	// tools/list, batches, tasks, allowed origins, the OAuth
	// authorization servers it lists.
	MCP mcpbridge.Config
	// Chain configures the interceptor chain (package interceptors):
	// deadlines per response_time class, the in-flight bound and shed
	// wait, JSON depth, idempotency.
	Chain interceptors.Config
	// REST configures the REST gateway (package gateway): CORS.
	REST gateway.Config
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

// Defaults of the server's own settings (the components' are theirs).
const (
	DefaultGRPCAddr = "127.0.0.1:9090"
	DefaultHTTPAddr = "127.0.0.1:8080"
	// DefaultMaxResultBytes is MaxResultBytes' default, 4 MiB: the cap of
	// a result, not of a request (gateway.DefaultMaxRequestBytes).
	DefaultMaxResultBytes = 4 << 20
	// DefaultRateLimitCeiling is RateLimitCeiling's default, per minute.
	DefaultRateLimitCeiling = 6000
)

// Defaults is the configuration toolsvc runs with when nothing is said. It
// is the one place the server's defaults live, the components' coming
// from their own (setComponentDefaults): the flags take their defaults
// from it (and so do the environment and the YAML file, which set flags),
// embedders and tests start from it, and Complete fills only what has no
// meaning at zero.
func Defaults() Config {
	c := Config{
		GRPCAddr:                 DefaultGRPCAddr,
		HTTPAddr:                 DefaultHTTPAddr,
		KnowledgeRefreshInterval: 5 * time.Second,
		RedisTimeout:             250 * time.Millisecond,
		RedisKeyPrefix:           "toolsvc:",
		RateLimitCeiling:         DefaultRateLimitCeiling,
		CacheBytes:               64 << 20,
		ShutdownGrace:            10 * time.Second,
		IdentityKeyRotation:      upstream.DefaultKeyRotation,
		LogLevel:                 "info",
		LogFormat:                "json",
		EmbeddingsModel:          "text-embedding-3-small",
		VectorSyncInterval:       2 * time.Second,
		MaxRequestBytes:          gateway.DefaultMaxRequestBytes,
		AuditFailure:             "closed",
		ListStatsInterval:        60 * time.Second,
		UpstreamsPoll:            5 * time.Second,
		AuthPoll:                 2 * time.Second,
		MaxResultBytes:           DefaultMaxResultBytes,
	}
	c.setComponentDefaults()
	return c
}

// Complete fills the defaults of fields whose zero value means nothing (an
// empty address, a zero size or duration), gives the components the
// settings they share (shareSettings) and validates the configuration. A
// field whose zero is documented to mean something (RateLimitCeiling 0
// disables the ceiling; MaxInFlight and ShedWait 0 choose the chain's
// default) is left as given: start from Defaults to get its default.
//
// Every rule between flags lives here, so that a configuration New accepts
// is one Complete accepted: New only fails on what it acquires (files,
// connections, the registry's checks).
func (c *Config) Complete() error {
	c.setDefaults()
	c.setComponentDefaults()
	c.shareSettings()
	return errors.Join(c.validate(), c.validateComponents())
}

// setDefaults fills the server's own fields whose zero means nothing.
func (c *Config) setDefaults() {
	d := Defaults()
	orZero(&c.GRPCAddr, d.GRPCAddr)
	if !c.DisableHTTP {
		orZero(&c.HTTPAddr, d.HTTPAddr)
	}
	if c.DB == "" {
		c.DB, _ = DefaultDBPath() // validate reports its failure
	}
	if c.KnowledgeDir == "" {
		c.KnowledgeDir, c.knowledgeDirDefaulted = DefaultKnowledgeDir, true
	}
	orZero(&c.LogLevel, d.LogLevel)
	orZero(&c.LogFormat, d.LogFormat)
	orZero(&c.EmbeddingsModel, d.EmbeddingsModel)
	orZero(&c.RedisKeyPrefix, d.RedisKeyPrefix)
	orZero(&c.RedisTimeout, d.RedisTimeout)
	orZero(&c.ShutdownGrace, d.ShutdownGrace)
	orZero(&c.ListStatsInterval, d.ListStatsInterval)
	orZero(&c.UpstreamsPoll, d.UpstreamsPoll)
	orZero(&c.AuthPoll, d.AuthPoll)
	orZero(&c.IdentityKeyRotation, d.IdentityKeyRotation)
	orZero(&c.KnowledgeRefreshInterval, d.KnowledgeRefreshInterval)
	orZero(&c.CacheBytes, d.CacheBytes)
	orZero(&c.MaxRequestBytes, d.MaxRequestBytes)
	orZero(&c.MaxResultBytes, d.MaxResultBytes)
	if c.PublicURL == "" && c.HTTPAddr != "" {
		scheme := "http://"
		if c.TLS() {
			scheme = "https://"
		}
		c.PublicURL = scheme + c.HTTPAddr
	}
}

// validate reports every bad server setting and every conflict between
// settings, each naming the flag and what it wants.
func (c *Config) validate() error {
	var errs []error
	if _, err := wire.NewMetadataHeaders(c.ToolMetadataHeaders); err != nil {
		errs = append(errs, fmt.Errorf("tool metadata headers: %w", err))
	}
	if c.DB == "" {
		if _, err := DefaultDBPath(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ShutdownDrain < 0 {
		errs = append(errs, fmt.Errorf("shutdown drain %s: want 0 (none) or a positive duration", c.ShutdownDrain))
	}
	if c.ShutdownGrace < 0 {
		errs = append(errs, fmt.Errorf("shutdown grace %s: want a positive duration", c.ShutdownGrace))
	}
	if c.MaxRequestBytes < 0 {
		errs = append(errs, fmt.Errorf("max request bytes %d: want a positive size (0: the default, %d)", c.MaxRequestBytes, gateway.DefaultMaxRequestBytes))
	}
	if err := c.embeddingsConflict(); err != nil {
		errs = append(errs, err)
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
	if c.SyncInterval < 0 {
		errs = append(errs, fmt.Errorf("sync interval %s: want 0 (manual, the default) or a positive duration", c.SyncInterval))
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
	if c.AuthFile == "" && !c.InsecureAllowAnonymous {
		for _, a := range []string{c.GRPCAddr, c.HTTPAddr} {
			if a != "" && !c.addrDisabled(a) && !loopback.Addr(a) {
				errs = append(errs, fmt.Errorf("development mode (no --auth-file) refuses to listen on %s: bind a loopback address, give --auth-file, or pass --insecure-allow-anonymous", a))
			}
		}
	}
	return errors.Join(errs...)
}

// embeddingsConflict is the one rule between the embeddings flags: an
// endpoint or an offline model, not both. Complete reports it, and
// Embedder refuses a configuration Complete did not see.
func (c *Config) embeddingsConflict() error {
	if c.EmbeddingsURL != "" && c.EmbeddingsModelDir != "" {
		return errors.New("--embeddings-url and --embeddings-model-dir conflict: embed with an endpoint or an offline model, not both")
	}
	return nil
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
