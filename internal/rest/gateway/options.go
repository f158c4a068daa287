package gateway

import (
	"io"
	"log/slog"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// Option configures New.
type Option func(*options)

type options struct {
	maxRequestBytes  int
	cors             CORS
	resourceMetadata string
	bodyReadTimeout  time.Duration
	logger           *slog.Logger
	metadataHeaders  wire.MetadataHeaders
}

// Defaults of the options.
const (
	DefaultMaxRequestBytes = 4 << 20
	DefaultBodyReadTimeout = 30 * time.Second
)

func defaultOptions() options {
	return options{
		maxRequestBytes: DefaultMaxRequestBytes,
		bodyReadTimeout: DefaultBodyReadTimeout,
		logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// WithMaxRequestBytes bounds request bodies; a larger body is refused with
// 413 before the chain sees it. Default DefaultMaxRequestBytes (4 MiB);
// n <= 0 keeps the default.
func WithMaxRequestBytes(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxRequestBytes = n
		}
	}
}

// WithMetadataHeaders forwards the headers allowed to the chain, for
// every call's ToolContext.metadata. Default none.
func WithMetadataHeaders(m wire.MetadataHeaders) Option {
	return func(o *options) { o.metadataHeaders = m }
}

// WithCORS answers browser callers from c.AllowedOrigins. Default: no CORS
// headers at all, so browsers on other origins cannot read responses.
func WithCORS(c CORS) Option {
	return func(o *options) { o.cors = c }
}

// WithResourceMetadata names the OAuth protected resource metadata URL
// (RFC 9728) that 401 responses point at in WWW-Authenticate. Default
// none: the challenge is a plain `Bearer realm="toolsvc"`.
func WithResourceMetadata(url string) Option {
	return func(o *options) { o.resourceMetadata = url }
}

// WithBodyReadTimeout bounds the time a client may take to send a request
// body, so slow clients cannot hold connections (the HTTP server already
// bounds headers). Default DefaultBodyReadTimeout (30 s); d <= 0 keeps the
// default.
func WithBodyReadTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.bodyReadTimeout = d
		}
	}
}

// WithLogger logs requests the gateway refuses before the chain (at debug)
// and responses it cannot write. Default: discard.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}
