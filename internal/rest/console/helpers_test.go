package console_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// chromiumPath is Debian's Chromium; the tests never download a browser
// (scripts/chromium.sh installs it with apt-get).
const chromiumPath = "/usr/bin/chromium"

// requireTools skips the test when node (or Chromium, with browser) is
// missing outside CI, and fails it in CI.
func requireTools(tb testing.TB, browser bool) string {
	tb.Helper()
	var missing []string
	node, err := exec.LookPath("node")
	if err != nil {
		missing = append(missing, "node")
	}
	if browser {
		if _, err := os.Stat(chromiumPath); err != nil {
			missing = append(missing, chromiumPath+" (run scripts/chromium.sh)")
		}
	}
	if len(missing) > 0 {
		testenv.Missing(tb, missing...)
	}
	return node
}

// run runs name with args in dir within timeout, failing tb with the
// combined output on error; it returns the output.
func run(tb testing.TB, timeout time.Duration, dir string, env []string, name string, args ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newKey returns a fresh random API key.
func newKey(tb testing.TB) string {
	tb.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	return "tsk_console_" + hex.EncodeToString(b[:])
}

// serverWithKey starts the real server with an auth file holding one API
// key allowed memory:* and knowledge:read, with the identifiers the memory
// layers need, and returns the server and the key.
func serverWithKey(tb testing.TB) (*testserver.Server, string) {
	tb.Helper()
	key := newKey(tb)
	file := fmt.Sprintf(`api_keys:
  - key_sha256: %q
    subject: console-tester
    tenant: acme
    permissions: ["memory:*", "knowledge:read"]
    identifiers: {org_id: acme, team_id: web, project_id: console, user_id: u-console}
`, auth.HashKey(key))
	path := authtest.WriteFile(tb, "auth.yaml", []byte(file))
	srv := testserver.New(tb, testserver.Options{Configure: func(c *server.Config) { c.AuthFile = path }})
	return srv, key
}
