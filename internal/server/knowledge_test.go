package server

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTestFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// authFileOf writes an auth file with one plain API key per tenant.
func authFileOf(tb testing.TB, tenants ...string) string {
	tb.Helper()
	var b strings.Builder
	b.WriteString("api_keys:\n")
	for _, t := range tenants {
		b.WriteString("  - key: tsk_" + t + "_0123456789abcdef\n    subject: " + t + "\n    tenant: " + t + "\n    permissions: [\"*\"]\n")
	}
	path := filepath.Join(tb.TempDir(), "auth.yaml")
	writeTestFile(tb, path, b.String())
	return path
}

// TestKnowledgeSingleTenantLayout: today's layout (no tenants/ directory)
// keeps working for a deployment of one tenant and logs what it assumed;
// with two tenants it is refused at start-up with the way out.
func TestKnowledgeSingleTenantLayout(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "adrs", "adr-1.md"),
		"---\nid: adr-1\ntype: adr\nlayer: team\ntitle: One\nstatus: accepted\n---\nbody\n")
	for _, tc := range []struct {
		name, authFile, tenant string
	}{
		{name: "development mode", tenant: "default"},
		{name: "one tenant", authFile: authFileOf(t, "acme"), tenant: "acme"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			d := Deps{Config: &Config{KnowledgeDir: dir, AuthFile: tc.authFile}, Logger: slog.New(slog.NewTextHandler(&log, nil))}
			kd, err := openKnowledge(d)
			if err != nil {
				t.Fatal(err)
			}
			if kd.Library().For(tc.tenant).Len() != 1 {
				t.Errorf("tenant %s has %d items, want 1", tc.tenant, kd.Library().For(tc.tenant).Len())
			}
			for _, want := range []string{"single-tenant layout", `tenant \"` + tc.tenant + `\"`, "have no owner"} {
				if !strings.Contains(log.String(), want) {
					t.Errorf("log does not say %q:\n%s", want, log.String())
				}
			}
		})
	}
	d := Deps{Config: &Config{KnowledgeDir: dir, AuthFile: authFileOf(t, "acme", "globex")}, Logger: slog.New(slog.DiscardHandler)}
	if _, err := openKnowledge(d); err == nil || !strings.Contains(err.Error(), "tenants/<tenant>/") || !strings.Contains(err.Error(), "acme, globex") {
		t.Errorf("two tenants on the single-tenant layout: err = %v", err)
	}
}

// TestKnowledgeCompanyWideIsExplicit: company-wide items reach tenants only
// with KnowledgeCompanyWide, and the log says when they are held back.
func TestKnowledgeCompanyWideIsExplicit(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "company-wide", "pol-1.md"),
		"---\nid: pol-1\ntype: policy\nlayer: company\ntitle: One\nstatus: accepted\n---\nbody\n")
	writeTestFile(t, filepath.Join(dir, "tenants", "acme", "pol-2.md"),
		"---\nid: pol-2\ntype: policy\nlayer: company\ntitle: Two\nstatus: accepted\n---\nbody\n")
	auth := authFileOf(t, "acme", "globex")
	for _, publish := range []bool{false, true} {
		var log bytes.Buffer
		d := Deps{Config: &Config{KnowledgeDir: dir, AuthFile: auth, KnowledgeCompanyWide: publish}, Logger: slog.New(slog.NewTextHandler(&log, nil))}
		kd, err := openKnowledge(d)
		if err != nil {
			t.Fatal(err)
		}
		_, got := kd.Library().For("globex").Get("pol-1")
		if got != publish {
			t.Errorf("publish=%v: globex sees the company-wide item: %v", publish, got)
		}
		if _, leaked := kd.Library().For("globex").Get("pol-2"); leaked {
			t.Error("globex sees acme's item")
		}
		if !publish && !strings.Contains(log.String(), "NOT published") {
			t.Errorf("log does not say company-wide items are held back:\n%s", log.String())
		}
	}
}
