package gateway_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// server a test starts (listeners, auditor, checkpointer, sessions,
// streams) must be gone when it ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
