// Package testenv decides what a test does when a tool it needs from the
// machine (Node, npm, Chromium) is missing: in CI that is a failure, because
// CI installs everything the tests need; on a developer's machine it is a
// skip that says how to make it a failure. It also builds the programs that
// tests run as processes, once per test process (Binary).
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// binaries are the programs Binary built in this test process, by module
// directory and package, in binDir.
var (
	binMu    sync.Mutex
	binDir   string
	binaries = map[string]*built{}
)

// built is one program of Binary: built once, its path or the failure.
type built struct {
	once sync.Once
	path string
	err  error
}

// Binary builds the main package pkg (as `go build` names it, e.g.
// "./cmd/toolsvc") of the module in dir once per test process and returns
// the program's path. Every test of the process shares it; the package's
// TestMain calls RemoveBinaries when they are done.
func Binary(tb testing.TB, dir, pkg string) string {
	tb.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	binMu.Lock()
	if binDir == "" {
		if binDir, err = os.MkdirTemp("", "toolsvc-test-bin-"); err != nil {
			binMu.Unlock()
			tb.Fatal(err)
		}
	}
	key := abs + "\x00" + pkg
	b := binaries[key]
	if b == nil {
		b = &built{path: filepath.Join(binDir, fmt.Sprintf("%d-%s", len(binaries), filepath.Base(pkg)))}
		binaries[key] = b
	}
	binMu.Unlock()
	b.once.Do(func() {
		cmd := exec.Command("go", "build", "-o", b.path, pkg)
		cmd.Dir = abs
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s in %s: %w\n%s", pkg, abs, err, out)
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

// RemoveBinaries removes what Binary built; TestMain calls it after m.Run.
func RemoveBinaries() {
	binMu.Lock()
	defer binMu.Unlock()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
		binDir, binaries = "", map[string]*built{}
	}
}

// RepoRoot is the root of the toolsvc repository above the working
// directory: the directory of the go.mod that declares the module
// github.com/toolsvc/toolsvc (the bench and deploy modules' go.mod files
// are passed over).
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(mod), "module github.com/toolsvc/toolsvc\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("testenv: the toolsvc repository's go.mod was not found above the working directory")
			return ""
		}
		dir = parent
	}
}
