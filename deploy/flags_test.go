// Package deploy_test checks the deployment files of the repository (the
// Helm chart in helm/toolsvc, compose.yaml) against the toolsvc binary
// they run: a flag or a key the binary does not know fails here, not at a
// rollout.
package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// pendingFlags are flags the deployment files pass that other branches of
// the fleet and deploy work adds to `toolsvc serve`. Until they are merged the binary
// lacks them and the check skips them, logged; once the binary has one,
// the test fails until it is removed from here, so the list empties at the
// merge and never hides a typo for long.
var pendingFlags = map[string]string{}

var serveFlags = sync.OnceValues(func() (map[string]bool, error) {
	dir, err := os.MkdirTemp("", "toolsvc-deploytest-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "toolsvc")
	build := exec.CommandContext(context.Background(), "go", "build", "-o", bin, "./cmd/toolsvc")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		return nil, &buildError{out: out, err: err}
	}
	// serve -h prints the flags to standard error and exits 0.
	var help bytes.Buffer
	cmd := exec.CommandContext(context.Background(), bin, "serve", "-h")
	cmd.Stdout, cmd.Stderr = &help, &help
	if err := cmd.Run(); err != nil {
		return nil, &buildError{out: help.Bytes(), err: err}
	}
	flags := map[string]bool{}
	re := regexp.MustCompile(`^\s+-([a-z0-9][a-z0-9-]*)`)
	sc := bufio.NewScanner(&help)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			flags[m[1]] = true
		}
	}
	return flags, nil
})

type buildError struct {
	out []byte
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

// checkFlags fails t for every name in used (flag names without dashes)
// that `toolsvc serve -h` does not list, where names it from.
func checkFlags(t *testing.T, where string, used []string) {
	t.Helper()
	flags, err := serveFlags()
	if err != nil {
		t.Fatalf("toolsvc serve -h: %v", err)
	}
	if len(flags) < 20 {
		t.Fatalf("toolsvc serve -h lists %d flags: the help format changed?", len(flags))
	}
	for p, why := range pendingFlags {
		if flags[p] {
			t.Errorf("--%s is in the binary now: remove it from pendingFlags (%s)", p, why)
		}
	}
	for _, name := range used {
		if flags[name] {
			continue
		}
		if why, ok := pendingFlags[name]; ok {
			t.Logf("%s passes --%s, not in this build yet (%s)", where, name, why)
			continue
		}
		t.Errorf("%s passes --%s, which `toolsvc serve` does not have", where, name)
	}
}

// argFlags returns the flag names of command-line arguments: --name=value,
// --name value, -name.
func argFlags(t *testing.T, where string, args []string) []string {
	t.Helper()
	var names []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "" {
			t.Errorf("%s: argument %q is not a flag", where, a)
			continue
		}
		names = append(names, name)
	}
	return names
}

// envFlags returns the flags that TOOLSVC_<FLAG> variables set (every
// flag has one), leaving out TOOLSVC_CONFIG and TOOLSVC_TOKEN, which name
// the config file and the stdio client's token.
func envFlags(names []string) []string {
	var flags []string
	for _, n := range names {
		f, ok := strings.CutPrefix(n, "TOOLSVC_")
		if !ok || f == "CONFIG" || f == "TOKEN" {
			continue
		}
		flags = append(flags, strings.ToLower(strings.ReplaceAll(f, "_", "-")))
	}
	return flags
}
