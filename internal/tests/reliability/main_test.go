package reliability

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind (the
// servers, clients, proxies and child processes of every scenario must be
// gone when it ends) and removes the toolsvc binary the process tests
// build.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBinaries()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left behind:\n%v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
