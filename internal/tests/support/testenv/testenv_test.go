package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "FALSE": false, "true": true, "1": true, "yes": true} {
		t.Setenv("CI", v)
		if got := InCI(); got != want {
			t.Errorf("CI=%q: InCI() = %v, want %v", v, got, want)
		}
	}
}

// recorder is a testing.TB that records whether a helper failed or skipped.
type recorder struct {
	testing.TB
	failed, skipped bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }
func (r *recorder) Skipf(string, ...any)  { r.skipped = true }

func TestMissingFailsInCIAndSkipsElsewhere(t *testing.T) {
	for _, ci := range []string{"true", ""} {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		Missing(r, "node")
		if r.failed != (ci == "true") || r.skipped != (ci == "") {
			t.Errorf("CI=%q: failed=%v skipped=%v", ci, r.failed, r.skipped)
		}
	}
}

// TestBinaryBuildsOnce builds a program of a module of its own: the second
// call returns the same file without building, the program runs, and a
// package that does not build fails the test with go build's output.
func TestBinaryBuildsOnce(t *testing.T) {
	t.Cleanup(RemoveBinaries)
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/hello\n\ngo 1.22\n")
	write("main.go", "package main\n\nfunc main() { println(\"hello\") }\n")
	first := Binary(t, dir, ".")
	info, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	write("main.go", "package main\n\nfunc main() { println(\"changed\") }\n")
	if again := Binary(t, dir, "."); again != first {
		t.Errorf("second Binary = %s, want %s", again, first)
	}
	if after, err := os.Stat(first); err != nil || !after.ModTime().Equal(info.ModTime()) {
		t.Errorf("the program was rebuilt (%v)", err)
	}
	out, err := exec.Command(first).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello") {
		t.Errorf("program: %q, %v; want hello", out, err)
	}
	r := &recorder{}
	Binary(r, dir, "./nonexistent")
	if !r.failed {
		t.Error("a package that does not build did not fail the test")
	}
}

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "internal", "tests", "support", "testenv", "testenv.go")); err != nil {
		t.Fatalf("RepoRoot = %q, which does not hold this package: %v", root, err)
	}
	t.Chdir(filepath.Join(root, "bench"))
	if got := RepoRoot(t); got != root {
		t.Fatalf("RepoRoot from bench/ = %q, want %q (the bench module's go.mod passed over)", got, root)
	}
	r := &recorder{}
	t.Chdir(t.TempDir())
	if got := RepoRoot(r); !r.failed || got != "" {
		t.Fatal("RepoRoot outside the repository did not fail")
	}
}
