package testenv

import "testing"

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "FALSE": false, "true": true, "1": true, "yes": true} {
		t.Setenv("CI", v)
		if got := InCI(); got != want {
			t.Errorf("CI=%q: InCI() = %v, want %v", v, got, want)
		}
	}
}

// recorder is a testing.TB that records whether Missing failed or skipped.
type recorder struct {
	testing.TB
	failed, skipped bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
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
