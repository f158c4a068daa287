package reliability

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAuditStoreOutageSQLiteFile is TestAuditStoreOutage for the embedded
// store, on the built binary: the running toolsvc loses the right to write
// its SQLite file (its file-size limit is set to 0 with prlimit, so every
// write to a regular file fails with EFBIG as a full or read-only disk
// would, while reads still work). Under the default --audit-failure=closed
// calls are refused with a retryable error that names the reason and no
// internals; once writes work again the same process serves without a
// restart, and nothing answered before the outage is lost.
func TestAuditStoreOutageSQLiteFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "outage.db")
	authFile, tokens := writeAuthFile(t, 1)
	p := newProcConfig(t, "--db", db, "--auth-file", authFile).start(t)
	conn := p.dial(t)
	call := func(tool string, args map[string]any) outcome {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		o, err := grpcCall(ctx, conn, tokens[0], tool, args, nil)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return o
	}
	add := func() outcome { return call("add-memory", map[string]any{"content": "audited " + randomWord()}) }
	reason := func(o outcome) string {
		d, _ := o.Error["details"].(map[string]any)
		r, _ := d["reason"].(string)
		return r
	}
	kept := randomWord()
	if o := call("add-memory", map[string]any{"content": "answered before the outage " + kept}); o.Code != "OK" {
		t.Fatalf("before the outage: %+v", o)
	}

	pid := p.cmd.Process.Pid
	var saved unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &saved); err != nil {
		t.Fatalf("reading the process's file-size limit: %v", err)
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 0, Max: saved.Max}, nil); err != nil {
		t.Fatalf("cutting the process's writes: %v", err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &saved, nil); err != nil {
				t.Fatalf("restoring the process's writes: %v", err)
			}
		}
	}
	defer restore()

	waitFor(t, "calls refused for the audit trail's sake", func() bool {
		o := add()
		if o.Code == "OK" {
			t.Fatal("add-memory answered OK while its store could not be written")
		}
		return reason(o) == "audit_unavailable"
	})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"add-memory", map[string]any{"content": "refused " + randomWord()}},
		{"search-memories", map[string]any{"query": "audited"}},
		{"get-sync-status", map[string]any{}},
	} {
		o := call(c.tool, c.args)
		retryable, _ := o.Error["retryable"].(bool)
		if o.Code != "PROVIDER_ERROR" || !retryable || reason(o) != "audit_unavailable" {
			t.Errorf("%s while the store cannot be written: %s retryable=%v reason=%q (%s); want a retryable PROVIDER_ERROR, reason audit_unavailable",
				c.tool, o.Code, retryable, reason(o), o.Message)
		}
		if o.RetryAfter == "" {
			t.Errorf("%s: no Retry-After on the refusal", c.tool)
		}
		if strings.Contains(o.Message, dir) || strings.Contains(strings.ToLower(o.Message), "sqlite") {
			t.Errorf("%s: the refusal leaks internals: %q", c.tool, o.Message)
		}
	}
	if v := metric(t, p.Metrics, "toolsvc_audit_store_failing"); v != 1 {
		t.Errorf("toolsvc_audit_store_failing = %v during the outage, want 1", v)
	}

	restore()
	waitFor(t, "recovery once the file can be written again", func() bool { return add().Code == "OK" })
	if v := metric(t, p.Metrics, "toolsvc_audit_store_failing"); v != 0 {
		t.Errorf("toolsvc_audit_store_failing = %v after recovery, want 0", v)
	}
	got := call("search-memories", map[string]any{"query": kept})
	if rs, _ := got.Result["data"].(map[string]any)["results"].([]any); got.Code != "OK" || len(rs) != 1 {
		t.Errorf("the memory answered before the outage: %s %s, %d results, want 1", got.Code, got.Message, len(rs))
	}
}
