package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/toolsvc/toolsvc/internal/base/logline"
	"github.com/toolsvc/toolsvc/internal/server"
)

// serverFlags binds the server configuration to flags. Every flag can also
// be set by the environment variable TOOLSVC_<FLAG> (upper case, dashes as
// underscores) or by a key of the same name in the YAML --config file.
// Precedence: flag, then environment, then config file, then default.
type serverFlags struct {
	fs     *flag.FlagSet
	cfg    server.Config
	config string
	cors   string
	metaH  string
	capsT  string
	mcpOr  string
	authz  string
}

func newServerFlags(name string, stderr io.Writer) *serverFlags {
	f := &serverFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(stderr)
	c := &f.cfg
	d := server.Defaults()
	fs.StringVar(&f.config, "config", "", "YAML file with any of these flags as keys")
	fs.StringVar(&c.GRPCAddr, "grpc-addr", d.GRPCAddr, "gRPC listen address")
	fs.StringVar(&c.HTTPAddr, "http-addr", d.HTTPAddr, "HTTP listen address (REST, MCP, health, metrics)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve /metrics without a credential on this address, bound privately (off when empty; /metrics on --http-addr needs metrics:read)")
	fs.StringVar(&c.DB, "db", d.DB, "store: a SQLite file path or a postgres:// URL (default $XDG_DATA_HOME/toolsvc/toolsvc.db, else ~/.local/share/toolsvc/toolsvc.db)")
	fs.StringVar(&c.KnowledgeDir, "knowledge-dir", d.KnowledgeDir, "directory of knowledge items (Markdown with YAML front matter); a named directory must exist (default "+server.DefaultKnowledgeDir+" when it exists, else no knowledge)")
	fs.BoolVar(&c.KnowledgeCompanyWide, "knowledge-company-wide", false, "publish the items of <knowledge-dir>/company-wide/ to every tenant")
	fs.DurationVar(&c.KnowledgeRefreshInterval, "knowledge-refresh-interval", d.KnowledgeRefreshInterval, "how often a replica checks the store for a knowledge set another replica published, besides Redis nudges (negative: never; each replica reloads on its own sync only)")
	fs.DurationVar(&c.SyncInterval, "sync-interval", d.SyncInterval, "run sync-knowledge for every tenant this often, as the system actor (0: manual, the default)")
	fs.StringVar(&c.AuthFile, "auth-file", "", "API keys and JWT settings (YAML); without it, development mode on loopback only")
	fs.BoolVar(&c.InsecureAllowAnonymous, "insecure-allow-anonymous", false, "allow development mode on non-loopback addresses")
	fs.StringVar(&c.Redis, "redis", "", "redis:// URL to share rate limits, the result cache and MCP sessions between replicas")
	fs.StringVar(&c.RedisKeyPrefix, "redis-key-prefix", d.RedisKeyPrefix, "prefix of the Redis keys and channel of shared MCP sessions and fleet messages; replicas of one fleet share it")
	fs.DurationVar(&c.RedisTimeout, "redis-timeout", d.RedisTimeout, "deadline of each Redis call; past it the fail-open/closed policy decides")
	fs.BoolVar(&c.RateLimitFailOpen, "rate-limit-fail-open", false, "admit calls when Redis is unreachable (default: refuse)")
	fs.IntVar(&c.RateLimitCeiling, "rate-limit-ceiling", d.RateLimitCeiling, "calls per minute per principal over all tools (0 disables)")
	fs.Int64Var(&c.CacheBytes, "cache-bytes", d.CacheBytes, "size of the in-memory result cache")
	fs.DurationVar(&c.Chain.Deadlines.Fast, "deadline-fast", d.Chain.Deadlines.Fast, "default deadline of fast tools")
	fs.DurationVar(&c.Chain.Deadlines.Medium, "deadline-medium", d.Chain.Deadlines.Medium, "default deadline of medium tools")
	fs.DurationVar(&c.Chain.Deadlines.Slow, "deadline-slow", d.Chain.Deadlines.Slow, "default deadline of slow tools")
	fs.DurationVar(&c.ShutdownDrain, "shutdown-drain", d.ShutdownDrain, "on SIGTERM, how long /readyz answers 503 while calls are still served, before the drain (0: none, for one process; behind a load balancer, longer than its health checks take to mark the replica down, e.g. 10s)")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", d.ShutdownGrace, "time in-flight calls get to finish on shutdown, after --shutdown-drain")
	fs.StringVar(&c.LogLevel, "log-level", d.LogLevel, "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", d.LogFormat, "json or text")
	fs.StringVar(&c.OTLPEndpoint, "otlp-endpoint", "", "OTLP/HTTP endpoint for traces (off when empty)")
	fs.StringVar(&c.EmbeddingsURL, "embeddings-url", "", "OpenAI-compatible /v1/embeddings URL for hybrid memory search")
	fs.StringVar(&c.EmbeddingsModel, "embeddings-model", d.EmbeddingsModel, "model name for the embeddings endpoint")
	fs.StringVar(&c.EmbeddingsModelDir, "embeddings-model-dir", "", "directory of a model2vec static embedding model (e.g. potion-base-8M) for offline hybrid memory search")
	fs.DurationVar(&c.VectorSyncInterval, "vector-sync-interval", d.VectorSyncInterval, "how often the memory vector index reads PostgreSQL's feed of other replicas' vector changes (0: off)")
	fs.IntVar(&c.MaxRequestBytes, "max-request-bytes", d.MaxRequestBytes, "largest accepted request body or message")
	fs.IntVar(&c.Chain.MaxJSONDepth, "max-json-depth", d.Chain.MaxJSONDepth, "deepest nesting accepted in free-form JSON arguments")
	fs.IntVar(&c.Chain.MaxInFlight, "max-in-flight", d.Chain.MaxInFlight, "tool calls served at once; more are shed with RATE_LIMITED (0: 32 per CPU, at least 64; negative: unlimited)")
	fs.DurationVar(&c.Chain.ShedWait, "shed-wait", d.Chain.ShedWait, "how long a call beyond --max-in-flight waits for a slot before it is shed (0: 200ms; negative: shed at once)")
	fs.DurationVar(&c.ListStatsInterval, "list-stats-interval", d.ListStatsInterval, "how often the pressure line is logged: the interval's call p95/p99 latency and the tool list's build figures (negative: never)")
	fs.DurationVar(&c.Chain.IdempotencyTTL, "idempotency-ttl", d.Chain.IdempotencyTTL, "how long the result of a call with an Idempotency-Key answers its repeats")
	fs.StringVar(&f.metaH, "tool-metadata-headers", "", "comma-separated request headers copied into every call's ToolContext metadata (default none; credential headers such as authorization, cookie, x-api-key are refused)")
	fs.StringVar(&f.cors, "cors-origins", "", "comma-separated browser origins allowed to call the REST API")
	fs.BoolVar(&c.REST.CORS.AllowCredentials, "cors-allow-credentials", false, "let browsers of --cors-origins send credentials (never with a wildcard origin)")
	fs.StringVar(&f.mcpOr, "mcp-allowed-origins", "", "comma-separated Origin values accepted by /mcp besides loopback")
	fs.BoolVar(&c.MCP.Stateless, "mcp-stateless", false, "serve MCP without sessions (any replica answers any request)")
	fs.IntVar(&c.MCP.SessionsPerPrincipal, "mcp-sessions-per-principal", d.MCP.SessionsPerPrincipal, "open MCP sessions one principal may hold; a new one beyond it ends its least recently used")
	fs.IntVar(&c.MCP.ListDescriptionMaxChars, "mcp-list-description-max-chars", d.MCP.ListDescriptionMaxChars, "cap tool descriptions in tools/list at a word boundary (0: whole descriptions)")
	fs.BoolVar(&c.MCP.ListStripSchemaMetadata, "mcp-list-strip-schema-metadata", d.MCP.ListStripSchemaMetadata, "drop description, examples, title, default and $comment keys from the input and output schemas of tools/list")
	fs.BoolVar(&c.MCP.ListFullSchemas, "mcp-list-full-schemas", d.MCP.ListFullSchemas, "list every tool's schemas whole in tools/list, the result envelope written out in each outputSchema (default: abridged, whole at the resource toolsvc://tools/{name}/output-schema)")
	fs.DurationVar(&c.MCP.ListTTL, "mcp-list-ttl", d.MCP.ListTTL, "cache lifetime tools/list results advertise to clients (ttlMs)")
	fs.IntVar(&c.MCP.ListMaxInFlight, "mcp-list-max-in-flight", d.MCP.ListMaxInFlight, "tools/list requests served at once; more wait for a slot (negative: no bound)")
	fs.IntVar(&c.MCP.BatchMaxMessages, "mcp-batch-max-messages", d.MCP.BatchMaxMessages, "messages one MCP JSON-RPC batch (revision 2025-03-26) may hold; a longer batch is refused whole, unrun")
	fs.IntVar(&c.MCP.BatchMaxAnswerBytes, "mcp-batch-max-answer-bytes", d.MCP.BatchMaxAnswerBytes, "bytes of one MCP batch's answer; the requests after it is reached are answered, unrun, with a retryable error (-32003)")
	fs.IntVar(&c.MCP.ListenersPerPrincipal, "mcp-listeners-per-principal", d.MCP.ListenersPerPrincipal, "open MCP subscriptions/listen streams (2026-07-28) one principal may hold; a new one beyond it ends the oldest")
	fs.IntVar(&c.MCP.TasksPerPrincipal, "mcp-tasks-per-principal", d.MCP.TasksPerPrincipal, "MCP tasks (sync-knowledge, Tasks extension) one principal may hold, running or finished; beyond it the oldest finished one is forgotten, or the call runs without a task")
	fs.DurationVar(&c.MCP.TaskTTL, "mcp-task-ttl", d.MCP.TaskTTL, "how long an MCP task and its result are kept from its creation (in the store: tasks survive a restart and every replica of the database answers for them)")
	fs.DurationVar(&c.MCP.TaskLease, "mcp-task-lease", d.MCP.TaskLease, "how long a running MCP task's replica may go without renewing it before any replica marks the task failed (retryable) as lost with its replica")
	fs.StringVar(&f.authz, "authorization-servers", "", "comma-separated OAuth authorization servers for MCP clients")
	fs.StringVar(&c.AuditFailure, "audit-failure", d.AuditFailure, "while the audit store fails: closed refuses calls (retryable), open serves them, counted and logged")
	fs.DurationVar(&c.AuditRetention, "audit-retention", d.AuditRetention, "prune audit records older than this in the background (0 keeps everything)")
	fs.StringVar(&c.PublicURL, "public-url", "", "external base URL of this service (default http://HTTP-ADDR, https:// with --tls-cert)")
	fs.DurationVar(&c.IdentityKeyRotation, "identity-key-rotation", d.IdentityKeyRotation, "how long one key signs the x-toolsvc-identity assertions sent to upstreams (published at /.well-known/jwks.json a period ahead, kept 5m after)")
	fs.Func("credential-keys", "comma-separated id:base64 32-byte keys sealing callers' own upstream credentials; the first seals, all open (rotate by putting a new key first; prefer TOOLSVC_CREDENTIAL_KEYS)", func(v string) error {
		c.CredentialKeys = strings.Split(v, ",")
		return nil
	})
	fs.StringVar(&c.TLSCert, "tls-cert", "", "PEM certificate (chain) both listeners serve TLS with; re-read when it changes")
	fs.StringVar(&c.TLSKey, "tls-key", "", "PEM private key of --tls-cert; re-read when it changes")
	fs.StringVar(&c.TLSClientCA, "tls-client-ca", "", "PEM CA certificates of clients: turns on mutual TLS; certificates map to the auth file's client_certs")
	fs.StringVar(&c.UpstreamsFile, "upstreams", "", "YAML file of upstream gRPC services and MCP servers whose tools are served behind the same chain, read again on SIGHUP and when it changes (docs/ADDING-A-TOOL.md)")
	fs.DurationVar(&c.AuthPoll, "auth-poll", d.AuthPoll, "how often the auth file is checked for changes (negative: never; SIGHUP still reloads it)")
	fs.IntVar(&c.MaxResultBytes, "max-result-bytes", d.MaxResultBytes, "largest tool result sent, in bytes (negative: no global cap)")
	fs.StringVar(&f.capsT, "tool-max-result-bytes", "", "comma-separated per-tool result caps, tool=bytes (e.g. search-memories=1048576); the smaller of it and --max-result-bytes applies")
	fs.DurationVar(&c.UpstreamsPoll, "upstreams-poll", d.UpstreamsPoll, "how often the upstreams file is checked for changes (negative: never; SIGHUP still reloads it)")
	return f
}

// parse applies flags, then the environment and the config file to flags
// not given on the command line.
func (f *serverFlags) parse(args []string) error {
	if err := f.fs.Parse(args); err != nil {
		return err
	}
	if f.fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(f.fs.Args(), " "))
	}
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if !set["config"] {
		if v, ok := os.LookupEnv("TOOLSVC_CONFIG"); ok {
			f.config = v
		}
	}
	fileValues := map[string]string{}
	if f.config != "" {
		b, err := os.ReadFile(f.config)
		if err != nil {
			return fmt.Errorf("config file: %w", err)
		}
		var raw map[string]any
		if err := yaml.Unmarshal(b, &raw); err != nil {
			return fmt.Errorf("config file %s: %w", f.config, err)
		}
		for k, v := range raw {
			if f.fs.Lookup(k) == nil || k == "config" {
				return fmt.Errorf("config file %s: unknown key %q", f.config, k)
			}
			switch v := v.(type) {
			case []any:
				parts := make([]string, len(v))
				for i, p := range v {
					parts[i] = fmt.Sprint(p)
				}
				fileValues[k] = strings.Join(parts, ",")
			default:
				fileValues[k] = fmt.Sprint(v)
			}
		}
	}
	var err error
	f.fs.VisitAll(func(fl *flag.Flag) {
		if err != nil || set[fl.Name] || fl.Name == "config" {
			return
		}
		env := "TOOLSVC_" + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if e := fl.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", env, v, e)
			}
			return
		}
		if v, ok := fileValues[fl.Name]; ok {
			if e := fl.Value.Set(v); e != nil {
				err = fmt.Errorf("config file key %s=%q: %w", fl.Name, v, e)
			}
		}
	})
	if err != nil {
		return err
	}
	f.cfg.REST.CORS.AllowedOrigins = splitList(f.cors)
	f.cfg.ToolMetadataHeaders = splitList(f.metaH)
	caps, err := server.ParseToolCaps(splitList(f.capsT))
	if err != nil {
		return &configError{fmt.Errorf("--tool-max-result-bytes: %w", err)}
	}
	f.cfg.ToolMaxResultBytes = caps
	f.cfg.MCP.AllowedOrigins = splitList(f.mcpOr)
	f.cfg.MCP.AuthorizationServers = splitList(f.authz)
	if err := f.cfg.Complete(); err != nil {
		return &configError{err}
	}
	return nil
}

// configError is a configuration the flags spelled correctly that
// Complete refused (a conflict between flags, a value out of range): a
// start-up failure, reported as such, not a usage error.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// newLogger builds the slog logger: JSON (production) or text, on w. The
// JSON lines are slog's, the common ones encoded by internal/base/logline.
func newLogger(cfg *server.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(logline.NewJSONHandler(w, opts))
}
