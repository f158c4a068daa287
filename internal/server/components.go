package server

import (
	"errors"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
)

// This file is the one place where the server meets its components'
// configurations (Config.MCP, Config.Chain, Config.REST): their defaults,
// their checks, and the settings the server shares among them. The flags
// (cmd/toolsvc) bind straight to the components' fields.

// setComponentDefaults fills the zero fields of the components'
// configurations with the components' defaults.
func (c *Config) setComponentDefaults() {
	c.REST.SetDefaults()
	c.MCP.SetDefaults()
	c.Chain.SetDefaults()
}

// validateComponents reports the bad fields of the components'
// configurations.
func (c *Config) validateComponents() error {
	return errors.Join(c.REST.Validate(), c.MCP.Validate(), c.Chain.Validate())
}

// shareSettings copies the server's settings that several components
// share into each: one flag, one value everywhere.
func (c *Config) shareSettings() {
	c.REST.MaxRequestBytes = c.MaxRequestBytes
	c.MCP.MaxRequestBytes = int64(c.MaxRequestBytes)
	c.MCP.PublicURL = c.PublicURL
	c.REST.ResourceMetadata = ""
	if c.AuthFile != "" && c.PublicURL != "" {
		// 401s point at the OAuth protected resource metadata.
		c.REST.ResourceMetadata = strings.TrimSuffix(c.PublicURL, "/") + oauthResourceMetadataPath
	}
	// The chain's MaxResultBytes 0 is no global cap; the server's is
	// negative for that (0 is the default).
	c.Chain.MaxResultBytes = max(c.MaxResultBytes, 0)
	c.Chain.Ceiling = ratelimit.Limit{Max: c.RateLimitCeiling, Window: time.Minute}
}

// orZero sets *p to v when *p is its type's zero value.
func orZero[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}
