package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/examples/upstreams/tickets/ticketsrv"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// TestMain removes the programs the tests built (testenv.Binary).
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBinaries()
	os.Exit(code)
}

func repoKnowledge(t *testing.T) string {
	t.Helper()
	return filepath.Join("..", "..", "examples", "knowledge")
}

func TestLintReportsTheChecklist(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"lint", "--knowledge-dir", repoKnowledge(t)}, nil, &out, &errOut)
	if code != 0 {
		t.Fatalf("lint exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"✓ add-memory 1.0.0", "✓ list-audit-events 1.0.0", "PASS: 10 tool(s)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lint output lacks %q:\n%s", want, out.String())
		}
	}
	// Every checklist item is printed: enforced with its rules, or not
	// applicable with the reason.
	for _, c := range registry.Checklist {
		want := "    - " + c.Item + ": " + c.How
		if c.Enforced() {
			want = "    ✓ " + c.Item + "  (" + strings.Join(c.Rules, ", ") + ")"
		}
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("lint output lacks %q", want)
		}
	}
}

func TestFlagsEnvironmentAndConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolsvc.yaml")
	if err := os.WriteFile(cfg, []byte("db: from-file.db\nlog-level: warn\nhttp-addr: 127.0.0.1:7001\ncors-origins: [https://a.example, https://b.example]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLSVC_LOG_LEVEL", "error")
	f := newServerFlags("serve", io.Discard)
	if err := f.parse([]string{"--config", cfg, "--http-addr", "127.0.0.1:7002"}); err != nil {
		t.Fatal(err)
	}
	c := f.cfg
	if c.DB != "from-file.db" || c.LogLevel != "error" || c.HTTPAddr != "127.0.0.1:7002" || len(c.REST.CORS.AllowedOrigins) != 2 {
		t.Fatalf("precedence flag > env > file broken: db=%s level=%s http=%s cors=%v", c.DB, c.LogLevel, c.HTTPAddr, c.REST.CORS.AllowedOrigins)
	}
}

func TestBadConfigurationIsRefusedClearly(t *testing.T) {
	// A usage error exits 2; a configuration Complete refuses is a
	// start-up failure: `cannot start: <reason>`, exit 1.
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"anonymous on a public address", []string{"--http-addr", "0.0.0.0:8080"}, 1, "cannot start: development mode"},
		{"unknown log level", []string{"--log-level", "loud"}, 1, "cannot start: log level"},
		{"stray argument", []string{"now"}, 2, "unexpected arguments"},
		{"unknown audit failure policy", []string{"--audit-failure", "maybe"}, 1, "audit failure policy"},
		{"negative audit retention", []string{"--audit-retention", "-1h"}, 1, "audit retention"},
		{"negative vector sync interval", []string{"--vector-sync-interval", "-1s"}, 1, "vector sync interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			if code := run(context.Background(), append([]string{"serve"}, tt.args...), nil, io.Discard, &errOut); code != tt.code {
				t.Fatalf("exit %d, want %d", code, tt.code)
			}
			if !strings.Contains(errOut.String(), tt.want) {
				t.Fatalf("message %q does not mention %q", errOut.String(), tt.want)
			}
		})
	}
	f := newServerFlags("serve", io.Discard)
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	_ = os.WriteFile(cfg, []byte("no-such-flag: 1\n"), 0o600)
	if err := f.parse([]string{"--config", cfg}); err == nil || !strings.Contains(err.Error(), `unknown key "no-such-flag"`) {
		t.Fatalf("unknown config key: %v", err)
	}
}

// TestDefaultsLiveInOnePlace: no flags, no environment and no file give
// exactly server.Defaults(), completed.
func TestDefaultsLiveInOnePlace(t *testing.T) {
	f := newServerFlags("serve", io.Discard)
	if err := f.parse(nil); err != nil {
		t.Fatal(err)
	}
	want := server.Defaults()
	if err := want.Complete(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.cfg, want) {
		t.Fatalf("flag defaults differ from server.Defaults():\nflags    %+v\ndefaults %+v", f.cfg, want)
	}
}

// TestZeroMeansWhatTheFlagSays: every flag documented with a meaning for 0
// keeps that meaning whether it comes from the command line, the
// environment or the config file (a 0 that means a default is that
// default after Complete).
func TestZeroMeansWhatTheFlagSays(t *testing.T) {
	zeros := []struct {
		flag string
		get  func(*server.Config) any
		zero any
	}{
		{"rate-limit-ceiling", func(c *server.Config) any { return c.RateLimitCeiling }, 0},
		// The chain's 0s are its defaults, which Complete fills in.
		{"max-in-flight", func(c *server.Config) any { return c.Chain.MaxInFlight }, interceptors.DefaultMaxInFlight},
		{"shed-wait", func(c *server.Config) any { return c.Chain.ShedWait }, interceptors.DefaultShedWait},
		{"audit-retention", func(c *server.Config) any { return c.AuditRetention }, time.Duration(0)},
		{"vector-sync-interval", func(c *server.Config) any { return c.VectorSyncInterval }, time.Duration(0)},
		{"sync-interval", func(c *server.Config) any { return c.SyncInterval }, time.Duration(0)},
		{"mcp-list-description-max-chars", func(c *server.Config) any { return c.MCP.ListDescriptionMaxChars }, 0},
	}
	for _, z := range zeros {
		usage := newServerFlags("serve", io.Discard).fs.Lookup(z.flag).Usage
		if !strings.Contains(usage, "0") {
			t.Errorf("--%s: usage %q does not say what 0 means", z.flag, usage)
		}
		env := "TOOLSVC_" + strings.ToUpper(strings.ReplaceAll(z.flag, "-", "_"))
		file := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(file, []byte(z.flag+": 0\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for how, args := range map[string][]string{
			"flag": {"--" + z.flag, "0"},
			"file": {"--config", file},
			"env":  nil,
		} {
			t.Run(z.flag+"/"+how, func(t *testing.T) {
				if how == "env" {
					t.Setenv(env, "0")
				}
				f := newServerFlags("serve", io.Discard)
				if err := f.parse(args); err != nil {
					t.Fatal(err)
				}
				if got := z.get(&f.cfg); got != z.zero {
					t.Fatalf("--%s 0 by %s became %v after Complete", z.flag, how, got)
				}
			})
		}
	}
}

// TestLintUpstreams: `toolsvc lint --upstreams` checks an upstream's tools
// with the in-tree ones, and names the tool and rule of every refusal.
func TestLintUpstreams(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	ticketsrv.New(ticketsrv.Options{}).Register(srv)
	if err := ticketsrv.RegisterReflection(srv); err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	dir := t.TempDir()
	write := func(extra string) string {
		path := filepath.Join(dir, "upstreams.yaml")
		body := "upstreams:\n  - name: tickets\n    address: " + lis.Addr().String() + "\n    tls: {mode: plaintext}\n    contracts: {reflection: true}\n    identity: {plain_headers: true}\n" + extra
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"lint", "--knowledge-dir", repoKnowledge(t), "--upstreams", write("")}, nil, &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "✓ create-ticket 1.0.0") || !strings.Contains(out.String(), "PASS: 12 tool(s)") {
		t.Fatalf("lint exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	out.Reset()
	bad := "    overlays:\n      tickets.v1.TicketService/GetTicket: {name: getticket, version: 1.0.0, description: Reads.}\n"
	code = run(context.Background(), []string{"lint", "--knowledge-dir", repoKnowledge(t), "--upstreams", write(bad)}, nil, &out, &errOut)
	if code != 1 {
		t.Fatalf("lint of a failing upstream tool exit %d\n%s", code, out.String())
	}
	for _, want := range []string{"getticket", "name.verb_noun", "upstream tickets", "description"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lint output lacks %q:\n%s", want, out.String())
		}
	}
	// An MCP server's mcp.protocol must be one the client speaks.
	path := filepath.Join(dir, "mcp.yaml")
	if err := os.WriteFile(path, []byte("upstreams:\n  - {name: m, mcp: {url: 'http://127.0.0.1:1/mcp', protocol: '2026'}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	code = run(context.Background(), []string{"lint", "--knowledge-dir", repoKnowledge(t), "--upstreams", path}, nil, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), `mcp.protocol "2026": want auto, 2026-07-28 or 2025-11-25`) {
		t.Fatalf("lint of a bad mcp.protocol: exit %d\n%s", code, errOut.String())
	}
}

// TestUpstreamsIsAConfigKey: the upstreams file can be named by the flag
// or by the upstreams key of --config.
func TestUpstreamsIsAConfigKey(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "toolsvc.yaml")
	if err := os.WriteFile(cfg, []byte("upstreams: examples/upstreams/upstreams.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newServerFlags("serve", io.Discard)
	if err := f.parse([]string{"--config", cfg}); err != nil {
		t.Fatal(err)
	}
	if f.cfg.UpstreamsFile != "examples/upstreams/upstreams.yaml" {
		t.Fatalf("UpstreamsFile = %q", f.cfg.UpstreamsFile)
	}
}
