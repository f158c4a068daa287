package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// Defaults of Config.
const (
	// DefaultMaxRequestBytes is Config.MaxRequestBytes' default, 4 MiB.
	DefaultMaxRequestBytes = 4 << 20
	// DefaultBodyReadTimeout is Config.BodyReadTimeout's default.
	DefaultBodyReadTimeout = 30 * time.Second
)

// Config is the REST gateway's configuration. Every field is optional:
// SetDefaults fills the zero ones, Validate reports the bad ones, and New
// does both.
type Config struct {
	// MaxRequestBytes bounds request bodies; a larger body is refused with
	// 413 before the chain sees it. Default DefaultMaxRequestBytes (4 MiB).
	MaxRequestBytes int
	// BodyReadTimeout bounds the time a client may take to send a request
	// body, so slow clients cannot hold connections (the HTTP server
	// already bounds headers). Default DefaultBodyReadTimeout (30 s).
	BodyReadTimeout time.Duration
	// CORS answers browser callers from CORS.AllowedOrigins. Default: no
	// CORS headers at all, so browsers on other origins cannot read
	// responses.
	CORS CORS
	// ResourceMetadata names the OAuth protected resource metadata URL
	// (RFC 9728) that 401 responses point at in WWW-Authenticate. Default
	// none: the challenge is a plain `Bearer realm="toolsvc"`.
	ResourceMetadata string
	// MetadataHeaders are the request headers forwarded to the chain, for
	// every call's ToolContext.metadata. Default none.
	MetadataHeaders wire.MetadataHeaders
	// Logger logs requests the gateway refuses before the chain (at debug)
	// and responses it cannot write. Default: discard.
	Logger *slog.Logger
}

// SetDefaults fills the zero fields of c with their defaults.
func (c *Config) SetDefaults() {
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.BodyReadTimeout == 0 {
		c.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every bad field of c, naming it and what it wants: a
// negative size or timeout, and CORS.Validate's problems.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxRequestBytes < 0 {
		errs = append(errs, fmt.Errorf("REST max request bytes %d: want a positive size (0: the default, %d)", c.MaxRequestBytes, DefaultMaxRequestBytes))
	}
	if c.BodyReadTimeout < 0 {
		errs = append(errs, fmt.Errorf("REST body read timeout %s: want a positive duration (0: the default, %s)", c.BodyReadTimeout, DefaultBodyReadTimeout))
	}
	if err := c.CORS.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
