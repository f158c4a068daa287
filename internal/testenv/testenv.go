// Package testenv decides what a test does when a tool it needs from the
// machine (Node, npm, Chromium) is missing: in CI that is a failure, because
// CI installs everything the tests need; on a developer's machine it is a
// skip that says how to make it a failure.
package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// InCI reports whether the tests run in CI: the CI variable is set to
// anything but "", "0" or "false" (.ci/run sets CI=true).
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// Missing fails the test in CI and skips it elsewhere, naming what is
// missing.
func Missing(tb testing.TB, what ...string) {
	tb.Helper()
	list := strings.Join(what, " and ")
	if InCI() {
		tb.Fatalf("CI is set but %s missing", list)
		return
	}
	tb.Skipf("%s not installed; skipping (set CI=true to make this a failure)", list)
}

// LookPath returns the path of the program name, or calls Missing.
func LookPath(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(tb, name)
	}
	return p
}
