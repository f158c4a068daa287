package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// rssFileKiB is this process's file-backed resident set.
func rssFileKiB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestReleaseStartupPages: the executable's read-only pages leave the
// resident set, and the program runs on (the pages it uses come back).
func TestReleaseStartupPages(t *testing.T) {
	before := rssFileKiB(t)
	if n := releaseStartupPages(); n <= 0 {
		t.Fatalf("released %d bytes of mappings", n)
	}
	after := rssFileKiB(t)
	if after >= before {
		t.Fatalf("file-backed resident set %d KiB before, %d KiB after", before, after)
	}
	// Code that has not run since is still there.
	if got := oneLine("a:\nb"); got != "a: b" {
		t.Fatalf("oneLine = %q", got)
	}
	t.Logf("file-backed resident set %d -> %d KiB", before, after)
}
