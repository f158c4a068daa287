package client

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
)

// Option configures a [Client] (see [New]).
type Option func(*config)

// config is what the options set.
type config struct {
	insecure    bool
	tls         *tls.Config
	rootCAs     *x509.CertPool
	clientCert  *tls.Certificate
	token       string
	source      TokenSource
	headers     metadata.MD
	retry       RetryPolicy
	deadlines   Deadlines
	noKeys      bool
	keepalive   keepalive.ClientParameters
	svcConfig   string
	noTelemetry bool
	dialOpts    []grpc.DialOption
	err         error
}

// RetryPolicy bounds the retries of a call that failed retryably.
type RetryPolicy struct {
	// MaxAttempts is how many times a call is sent at most, the first time
	// included; 1 turns retries off. Default 4.
	MaxAttempts int
	// InitialBackoff is the wait before the first retry; each retry waits
	// twice as long as the one before, up to MaxBackoff, half of it at
	// random (jitter). Default 100 ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the wait between two attempts computed from the
	// backoff. Default 5 s.
	MaxBackoff time.Duration
	// MaxRetryAfter is the longest retryAfter the client waits out; when
	// the server asks for a longer wait, the error is returned at once for
	// the caller to decide. Default 30 s.
	MaxRetryAfter time.Duration
}

// DefaultRetryPolicy is the policy of a client without [WithRetryPolicy]:
// 4 attempts, backoff from 100 ms to 5 s, retryAfter waited up to 30 s.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 4, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second, MaxRetryAfter: 30 * time.Second}

// Deadlines are the default deadline of one attempt of a tool call, by the
// tool's declared response-time class, when the caller's context has none.
type Deadlines struct {
	// Fast is the deadline of a fast tool (declared under 100 ms).
	Fast time.Duration
	// Medium is the deadline of a medium tool (100 ms to 1 s), and of
	// ToolService's own methods.
	Medium time.Duration
	// Slow is the deadline of a slow tool (over 1 s).
	Slow time.Duration
}

// DefaultDeadlines are the server's default deadlines (fast 2 s, medium
// 10 s, slow 60 s) plus one second, so that the server's TIMEOUT, with its
// hints, arrives before the client gives up.
var DefaultDeadlines = Deadlines{Fast: 3 * time.Second, Medium: 11 * time.Second, Slow: 61 * time.Second}

func (d Deadlines) forClass(class string) time.Duration {
	switch class {
	case "fast":
		return d.Fast
	case "slow":
		return d.Slow
	default:
		return d.Medium
	}
}

// DefaultKeepalive pings a connection that has calls in flight and has
// been silent for 5 minutes, and drops it when no answer comes within 20 s.
// Five minutes is grpc-go's default minimum on the server side: a client
// pinging more often is told too_many_pings and disconnected.
var DefaultKeepalive = keepalive.ClientParameters{Time: 5 * time.Minute, Timeout: 20 * time.Second}

// DefaultServiceConfig balances calls round-robin over every address the
// target resolves to (the replicas behind a headless service's DNS name),
// skipping those that cannot be reached. Retries are the client's own,
// not grpc-go's (they follow the ToolError).
const DefaultServiceConfig = `{"loadBalancingConfig": [{"round_robin": {}}]}`

// WithInsecure connects without TLS: for a server on loopback in
// development. A bearer token is then sent in plaintext. Default: TLS.
func WithInsecure() Option { return func(c *config) { c.insecure = true } }

// WithTLSConfig uses cfg for TLS (it is cloned; [WithRootCAs] and
// [WithClientCertificate] still apply to the clone). Default: TLS 1.2 or
// later, the system's roots.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *config) { c.tls = cfg.Clone() }
}

// WithRootCAs trusts only the certificates of pool for the server's
// certificate. Default: the system's roots.
func WithRootCAs(pool *x509.CertPool) Option { return func(c *config) { c.rootCAs = pool } }

// WithCAFile trusts only the PEM certificates in the file path for the
// server's certificate; New reports a file it cannot read. Default: the
// system's roots.
func WithCAFile(path string) Option {
	return func(c *config) {
		b, err := os.ReadFile(path)
		if err != nil {
			c.err = fmt.Errorf("client: CA file: %w", err)
			return
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			c.err = fmt.Errorf("client: CA file %s holds no PEM certificate", path)
			return
		}
		c.rootCAs = pool
	}
}

// WithClientCertificate presents cert in the TLS handshake: mutual TLS,
// where the server maps the certificate to a principal as it does an API
// key. Default: none.
func WithClientCertificate(cert tls.Certificate) Option {
	return func(c *config) { c.clientCert = &cert }
}

// WithClientCertificateFiles is [WithClientCertificate] with the
// certificate and its key read from PEM files; New reports files it cannot
// read.
func WithClientCertificateFiles(certFile, keyFile string) Option {
	return func(c *config) {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			c.err = fmt.Errorf("client: client certificate: %w", err)
			return
		}
		c.clientCert = &cert
	}
}

// WithAPIKey authenticates every call with the API key key. Default: no
// credential (accepted only by a server in development mode).
func WithAPIKey(key string) Option { return func(c *config) { c.token, c.source = key, nil } }

// WithJWT authenticates every call with the JWT token, as it is. Use
// [WithTokenSource] for a token that expires during the client's life.
func WithJWT(token string) Option { return func(c *config) { c.token, c.source = token, nil } }

// WithTokenSource authenticates every call with a token of ts, which the
// client caches until a minute before its expiry, and asks for again when
// the server refuses the one it holds (the call is then sent once more).
func WithTokenSource(ts TokenSource) Option { return func(c *config) { c.source, c.token = ts, "" } }

// WithAgent names the calling service and its version on every call
// (x-agent-id, x-agent-version): the server logs, audits and scopes agent
// memories by them. Default: none (the server reads the user agent).
func WithAgent(id, version string) Option {
	return func(c *config) {
		c.header(HeaderAgentID, id)
		if version != "" {
			c.header(HeaderAgentVersion, version)
		}
	}
}

// WithDefaultHeader sends the header key (gRPC metadata, lower case) with
// value on every call; [WithHeader] adds headers to the calls of one
// context. Default: none.
func WithDefaultHeader(key, value string) Option { return func(c *config) { c.header(key, value) } }

func (c *config) header(key, value string) {
	if c.headers == nil {
		c.headers = metadata.MD{}
	}
	c.headers.Set(key, value)
}

// WithRetryPolicy replaces [DefaultRetryPolicy]; zero fields keep their
// defaults.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(c *config) {
		d := DefaultRetryPolicy
		c.retry = RetryPolicy{
			MaxAttempts:    pick(p.MaxAttempts, d.MaxAttempts),
			InitialBackoff: pick(p.InitialBackoff, d.InitialBackoff),
			MaxBackoff:     pick(p.MaxBackoff, d.MaxBackoff),
			MaxRetryAfter:  pick(p.MaxRetryAfter, d.MaxRetryAfter),
		}
	}
}

// WithDeadlines replaces [DefaultDeadlines] (match the server's
// --deadline-fast, --deadline-medium and --deadline-slow plus a margin);
// zero fields keep their defaults.
func WithDeadlines(d Deadlines) Option {
	return func(c *config) {
		c.deadlines = Deadlines{Fast: pick(d.Fast, DefaultDeadlines.Fast), Medium: pick(d.Medium, DefaultDeadlines.Medium),
			Slow: pick(d.Slow, DefaultDeadlines.Slow)}
	}
}

// WithoutIdempotencyKeys stops the client from adding an idempotency key to
// calls of tools with side effects. Such calls are then never retried
// (a retry could apply the write twice); a key given with
// [WithIdempotencyKey] is still sent. Default: a fresh key per logical call.
func WithoutIdempotencyKeys() Option { return func(c *config) { c.noKeys = true } }

// WithKeepalive replaces [DefaultKeepalive]; the server must permit pings
// that often.
func WithKeepalive(p keepalive.ClientParameters) Option { return func(c *config) { c.keepalive = p } }

// WithServiceConfig replaces [DefaultServiceConfig] (gRPC service config
// JSON), unless the resolver supplies one.
func WithServiceConfig(json string) Option { return func(c *config) { c.svcConfig = json } }

// WithoutTelemetry leaves out the otelgrpc stats handler. Default: on,
// which costs little and records nothing while the process has no
// OpenTelemetry tracer or meter provider.
func WithoutTelemetry() Option { return func(c *config) { c.noTelemetry = true } }

// WithDialOptions adds grpc-go dial options after the client's own.
// Unary interceptors given this way run once per attempt, inside the
// client's retries.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dialOpts = append(c.dialOpts, opts...) }
}

// pick returns v, or def when v is zero.
func pick[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
