package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/bench/internal/toolsvc"
)

func TestKibToMiB(t *testing.T) {
	for in, want := range map[string]float64{"51200 kB": 50, " 1024 kB": 1, "": 0, "junk": 0} {
		if got := kibToMiB(in); got != want {
			t.Errorf("kibToMiB(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestIdleFootprint starts the real binary as the report does and checks
// the figures are readings, not zeros: a resident set made of anonymous
// and file-backed parts, and a start-up time.
func TestIdleFootprint(t *testing.T) {
	wd, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := toolsvc.FindRepo(wd)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin, err := toolsvc.Build(t.Context(), repo, tmp)
	if err != nil {
		t.Fatal(err)
	}
	m := &measurer{log: slog.New(slog.DiscardHandler), tmp: tmp, bin: bin, repo: repo}
	f, err := m.idle(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if f.StartupMs <= 0 || f.RSSMiB <= 0 || f.AnonMiB <= 0 || f.FileMiB <= 0 || f.BinaryMiB <= 0 {
		t.Fatalf("idle footprint has empty readings: %+v", f)
	}
	if d := f.RSSMiB - f.AnonMiB - f.FileMiB; d < -1 || d > 1 {
		t.Errorf("RSS %.1f MiB is not anonymous %.1f + file-backed %.1f (+ shared memory)", f.RSSMiB, f.AnonMiB, f.FileMiB)
	}
	var b strings.Builder
	writeIdle(func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }, f)
	if !strings.Contains(b.String(), "## Idle footprint") {
		t.Fatalf("report section:\n%s", b.String())
	}
	t.Logf("idle: %+v", *f)
}
