package mcpbridge_test

import (
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/mcpbridge"
)

// TestConfigDefaultsAndValidate: SetDefaults fills the zero fields (and
// keeps ListMaxInFlight's negative, no bound), Validate names every bad
// field, and New refuses what Validate refuses.
func TestConfigDefaultsAndValidate(t *testing.T) {
	c := mcpbridge.Config{ListMaxInFlight: -1, BatchMaxMessages: -1}
	c.SetDefaults()
	if c.PageSize != mcpbridge.DefaultPageSize || c.MaxRequestBytes != mcpbridge.DefaultMaxRequestBytes || c.Logger == nil || c.ReplicaID == "" {
		t.Errorf("SetDefaults left zero fields: %+v", c)
	}
	if c.ListMaxInFlight != -1 || c.BatchMaxMessages != -1 {
		t.Errorf("SetDefaults changed set fields: ListMaxInFlight %d, BatchMaxMessages %d", c.ListMaxInFlight, c.BatchMaxMessages)
	}
	err := c.Validate()
	for _, want := range []string{"Config.Registry is required", "Config.Channel is required", "Config.Auth is required", "Config.BatchMaxMessages -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "ListMaxInFlight") {
		t.Errorf("Validate() refuses ListMaxInFlight -1 (no bound): %v", err)
	}
	if _, err := mcpbridge.New(mcpbridge.Config{}); err == nil || !strings.Contains(err.Error(), "Config.Registry is required") {
		t.Errorf("New(Config{}) = %v, want Registry named", err)
	}
}
