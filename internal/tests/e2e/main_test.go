package e2e

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// server a test starts (listeners, auditor, checkpointer, sessions,
// streams) must be gone when it ends. The programs the tests built
// (testenv.Binary) are removed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		testenv.RemoveBinaries()
		os.Exit(code)
	}))
}
