package server

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestNoDurationAttrInLogs: slog writes a time.Duration as nanoseconds
// ("poll":5000000000), which no operator reads at a glance; toolsvc logs
// durations as Go duration strings ("5s"). This scans the non-test sources
// for slog.Duration.
func TestNoDurationAttrInLogs(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	var found []string
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), "slog.Duration(") {
				rel, _ := filepath.Rel(root, path)
				found = append(found, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) > 0 {
		t.Errorf("slog.Duration logs nanoseconds; use slog.String(key, d.String()) in %v", found)
	}
}
