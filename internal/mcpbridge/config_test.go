package mcpbridge_test

import (
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/mcpbridge"
)

// TestConfigDefaultsAndValidate: SetDefaults fills the zero settings (and
// keeps ListMaxInFlight's negative, no bound) and no wiring, Validate
// names every bad setting, and New refuses what Validate refuses and the
// missing collaborators.
func TestConfigDefaultsAndValidate(t *testing.T) {
	c := mcpbridge.Config{ListMaxInFlight: -1, BatchMaxMessages: -1}
	c.SetDefaults()
	if c.PageSize != mcpbridge.DefaultPageSize || c.MaxRequestBytes != mcpbridge.DefaultMaxRequestBytes || c.TaskLease != mcpbridge.DefaultTaskLease {
		t.Errorf("SetDefaults left zero fields: %+v", c)
	}
	if c.Logger != nil || c.ReplicaID != "" || c.AuthFailed != nil || c.ForeignHost != nil {
		t.Errorf("SetDefaults set wiring: %+v", c)
	}
	if c.ListMaxInFlight != -1 || c.BatchMaxMessages != -1 {
		t.Errorf("SetDefaults changed set fields: ListMaxInFlight %d, BatchMaxMessages %d", c.ListMaxInFlight, c.BatchMaxMessages)
	}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "Config.BatchMaxMessages -1") || strings.Contains(err.Error(), "required") {
		t.Errorf("Validate() = %v, want it to name BatchMaxMessages and no wiring", err)
	}
	if err != nil && strings.Contains(err.Error(), "ListMaxInFlight") {
		t.Errorf("Validate() refuses ListMaxInFlight -1 (no bound): %v", err)
	}
	_, err = mcpbridge.New(mcpbridge.Config{BatchMaxMessages: -1})
	for _, want := range []string{"Config.Registry is required", "Config.Channel is required", "Config.Auth is required", "Config.BatchMaxMessages -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New() = %v, want it to name %q", err, want)
		}
	}
}
