package upstream

import (
	"errors"
	"fmt"
	"time"
)

// IdentityConfig is how an upstream learns who is calling
// (docs/OPERATIONS.md, "Identity of callers to upstreams").
type IdentityConfig struct {
	// TTL is how long an assertion is valid. Default DefaultAssertionTTL
	// (60s), at most MaxAssertionTTL (5m).
	TTL time.Duration `yaml:"ttl"`
	// PlainHeaders also sends the principal as unsigned metadata
	// (x-toolsvc-tenant, x-toolsvc-subject, x-toolsvc-transport and the
	// identifiers; toolsvc/… keys of an MCP call's _meta), for an
	// upstream that cannot verify the assertion yet: anything else that
	// reaches the upstream can send them too. Default false.
	PlainHeaders bool `yaml:"plain_headers"`
}

func (c *IdentityConfig) complete() []error {
	var errs []error
	switch {
	case c.TTL == 0:
		c.TTL = DefaultAssertionTTL
	case c.TTL < time.Second:
		errs = append(errs, fmt.Errorf("identity.ttl %s: want at least 1s", c.TTL))
	case c.TTL > MaxAssertionTTL:
		errs = append(errs, fmt.Errorf("identity.ttl %s: want at most %s", c.TTL, MaxAssertionTTL))
	}
	if c.TTL%time.Second != 0 {
		errs = append(errs, errors.New("identity.ttl: want whole seconds (JWT times are seconds)"))
	}
	return errs
}
