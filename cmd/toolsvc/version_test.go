package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/version"
)

func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"version"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("version exit %d: %s", code, errOut.String())
	}
	if want := "toolsvc " + version.Version + " (commit "; !strings.HasPrefix(out.String(), want) {
		t.Fatalf("version printed %q, want the prefix %q", out.String(), want)
	}
}

// TestInstalledBinaryKnowsItsCommit builds the binary as `make install`
// does (VCS stamping on) and checks that `toolsvc version` names the
// commit the checkout is at.
func TestInstalledBinaryKnowsItsCommit(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v (the test runs in the repository's checkout)", err)
	}
	bin := filepath.Join(t.TempDir(), "toolsvc")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("toolsvc version: %v", err)
	}
	if want := "(commit " + strings.TrimSpace(string(head))[:12]; !strings.Contains(string(out), want) {
		t.Fatalf("toolsvc version printed %q, want it to contain %q", out, want)
	}
}
