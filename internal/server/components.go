package server

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/internal/mcpbridge"
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
	setMCPDefaults(&c.MCP)
	c.Chain.SetDefaults()
}

// validateComponents reports the bad fields of the components'
// configurations.
func (c *Config) validateComponents() error {
	return errors.Join(c.REST.Validate(), validateMCP(&c.MCP), c.Chain.Validate())
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

// setMCPDefaults fills the settings of m that the flags show a default
// for. mcpbridge.New fills the same zero fields with the same figures;
// once mcpbridge.Config has SetDefaults, this is m.SetDefaults().
func setMCPDefaults(m *mcpbridge.Config) {
	orZero(&m.SessionsPerPrincipal, 1024)
	orZero(&m.ListenersPerPrincipal, 16)
	orZero(&m.TasksPerPrincipal, 16)
	orZero(&m.ListMaxInFlight, mcpbridge.DefaultListMaxInFlight)
	orZero(&m.BatchMaxMessages, mcpbridge.DefaultBatchMaxMessages)
	orZero(&m.BatchMaxAnswerBytes, mcpbridge.DefaultBatchMaxAnswerBytes)
	orZero(&m.ListTTL, mcpbridge.DefaultListTTL)
	orZero(&m.TaskTTL, time.Hour)
	orZero(&m.TaskLease, 15*time.Second)
}

// validateMCP reports the bad settings of m; once mcpbridge.Config has
// Validate, this is m.Validate().
func validateMCP(m *mcpbridge.Config) error {
	var errs []error
	if m.ListDescriptionMaxChars < 0 {
		errs = append(errs, fmt.Errorf("MCP list description max chars %d: want 0 (whole descriptions) or more", m.ListDescriptionMaxChars))
	}
	if m.BatchMaxMessages < 0 {
		errs = append(errs, fmt.Errorf("MCP batch max messages %d: want 0 (the default, %d) or more", m.BatchMaxMessages, mcpbridge.DefaultBatchMaxMessages))
	}
	if m.BatchMaxAnswerBytes < 0 {
		errs = append(errs, fmt.Errorf("MCP batch max answer bytes %d: want 0 (the default, %d) or more", m.BatchMaxAnswerBytes, mcpbridge.DefaultBatchMaxAnswerBytes))
	}
	if m.ListTTL < 0 {
		errs = append(errs, fmt.Errorf("MCP list TTL %s: want a positive duration", m.ListTTL))
	}
	return errors.Join(errs...)
}

// orZero sets *p to v when *p is its type's zero value.
func orZero[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}
