package auth

import (
	"log/slog"
	"net/http"
	"time"
)

// Option configures [New].
type Option func(*options)

type options struct {
	logger     *slog.Logger
	clock      func() time.Time
	httpClient *http.Client
	refresh    time.Duration
}

// DefaultJWKSRefresh is how often a jwks_url is fetched again.
const DefaultJWKSRefresh = 10 * time.Minute

// jwksFetchTimeout bounds every JWKS fetch, including the first one in New.
const jwksFetchTimeout = 10 * time.Second

func defaultOptions() options {
	return options{
		logger:  slog.New(slog.DiscardHandler),
		clock:   time.Now,
		refresh: DefaultJWKSRefresh,
		httpClient: &http.Client{
			Timeout: jwksFetchTimeout,
			// A redirect could lead away from the https or loopback
			// address the auth file was checked for.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// WithLogger sets the logger for background JWKS refresh failures. Default:
// discard.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithClock sets the time source for JWT exp, nbf and iat checks. Default:
// time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.clock = now
		}
	}
}

// WithHTTPClient sets the client that fetches jwks_url. Default: a client
// with a 10 s timeout that does not follow redirects. Each fetch is also
// bounded to 10 s and 1 MiB whatever the client.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) {
		if c != nil {
			o.httpClient = c
		}
	}
}

// WithJWKSRefresh sets how often jwks_url is fetched again; non-positive
// values are ignored. Default: [DefaultJWKSRefresh] (10 minutes).
func WithJWKSRefresh(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.refresh = d
		}
	}
}
