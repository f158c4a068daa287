package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// serveForProbe runs `toolsvc serve` in this process with an auth file and
// returns its HTTP URL and gRPC address once both listen.
// With creds nil it runs in development mode (anonymous on loopback).
func serveForProbe(t *testing.T, creds *testserver.Credentials) (base, grpcAddr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testenv.Buffer{}
	done := make(chan int, 1)
	args := []string{"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--db", filepath.Join(t.TempDir(), "probe.db"), "--knowledge-dir", repoKnowledge(t), "--shutdown-drain", "1s"}
	if creds != nil {
		args = append(args, "--auth-file", creds.AuthFile)
	}
	go func() { done <- cmdServe(ctx, args, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("toolsvc serve did not stop")
		}
	})
	deadline := time.Now().Add(time.Minute)
	for base == "" || grpcAddr == "" {
		if time.Now().After(deadline) {
			t.Fatalf("toolsvc serve did not listen:\n%s", logs.String())
		}
		select {
		case code := <-done:
			t.Fatalf("toolsvc serve ended with %d:\n%s", code, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		for _, l := range strings.Split(logs.String(), "\n") {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(l), &rec) != nil {
				continue
			}
			switch rec.Msg {
			case "HTTP listening":
				base = "http://" + rec.Addr
			case "gRPC listening":
				grpcAddr = rec.Addr
			}
		}
	}
	return base, grpcAddr
}

func probe(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code = run(context.Background(), append([]string{"probe"}, args...), nil, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestProbe runs toolsvc probe against a real server: every transport's
// steps pass with a valid key; a refused key, a tool the caller may not
// see, a bad call and an unreachable transport each fail the step that
// meets them, name why, and exit 1; usage errors exit 2.
func TestProbe(t *testing.T) {
	creds := testserver.WriteCredentials(t)
	base, grpcAddr := serveForProbe(t, creds)

	t.Run("every transport passes", func(t *testing.T) {
		code, out, errOut := probe(t, base, "-grpc-addr", grpcAddr, "-token", creds.Full)
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		for _, want := range []string{
			"mcp-2025  initialize", "session opened", "mcp-2025  tools/call", "mcp-2025  end session",
			"mcp-2026  server/discover", "2026-07-28", "mcp-2026  tools/call",
			"rest      GET /v1/tools", "rest      POST :call", "grpc      ListTools", "grpc      CallTool",
			"ok: 12 steps passed",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "FAILED") {
			t.Errorf("a step failed:\n%s", out)
		}
	})

	t.Run("without -grpc-addr gRPC is not probed", func(t *testing.T) {
		// The URL does not say where gRPC listens: a guessed port probed
		// whatever listened there.
		code, out, errOut := probe(t, base, "-token", creds.Full)
		if code != 0 || !strings.Contains(out, "gRPC not probed: give -grpc-addr") || !strings.Contains(out, "ok: 10 steps passed") {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		if strings.Contains(out, "grpc      ") {
			t.Errorf("gRPC probed at a guessed address:\n%s", out)
		}
		code, _, errOut = probe(t, base, "-token", creds.Full, "-transports", "rest,grpc")
		if code != 2 || !strings.Contains(errOut, "-transports names grpc: give -grpc-addr") {
			t.Errorf("grpc asked for without an address: exit %d, stderr %q; want 2 and a usage line", code, errOut)
		}
	})

	t.Run("transports that reach different servers disagree", func(t *testing.T) {
		// gRPC reaches another, anonymous server: it passes where the
		// others are refused, and the probe says they disagree.
		_, otherGRPC := serveForProbe(t, nil)
		code, out, _ := probe(t, base, "-grpc-addr", otherGRPC, "-token", creds.Bad)
		if code != 1 || !strings.Contains(out, "transports disagree: mcp-2025, mcp-2026, rest failed where grpc passed") {
			t.Fatalf("exit %d, want 1 and the disagreement named\n%s", code, out)
		}
	})

	t.Run("flags after the URL", func(t *testing.T) {
		code, out, errOut := probe(t, base, "-transports", "rest", "-token", creds.Full)
		if code != 0 || !strings.Contains(out, "ok: 2 steps passed") {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
	})

	t.Run("a refused credential fails each transport's first step", func(t *testing.T) {
		code, out, _ := probe(t, "-grpc-addr", grpcAddr, "-token", creds.Bad, base)
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s", code, out)
		}
		for _, want := range []string{
			"mcp-2025  initialize", "mcp-2026  server/discover", "rest      GET /v1/tools", "grpc      ListTools",
		} {
			line := lineWith(out, want)
			if !strings.Contains(line, "FAILED") {
				t.Errorf("step %q did not fail: %q", want, line)
			}
		}
		if line := lineWith(out, "grpc      ListTools"); !strings.Contains(line, "UNAUTHORIZED") {
			t.Errorf("gRPC failure does not name UNAUTHORIZED: %q", line)
		}
		if line := lineWith(out, "rest      GET /v1/tools"); !strings.Contains(line, "HTTP 401") {
			t.Errorf("REST failure does not name HTTP 401: %q", line)
		}
		if strings.Contains(out, "tools/call") || strings.Contains(out, "CallTool") {
			t.Errorf("steps after a failed one ran:\n%s", out)
		}
	})

	t.Run("a tool the caller may not see", func(t *testing.T) {
		code, out, _ := probe(t, base, "-grpc-addr", grpcAddr, "-token", creds.NoPermission)
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s", code, out)
		}
		if n := strings.Count(out, "FAILED: 0 tools listed, get-sync-status not among them"); n != 4 {
			t.Errorf("%d transports said the tool is not listed, want 4:\n%s", n, out)
		}
	})

	t.Run("a call the tool refuses", func(t *testing.T) {
		code, out, _ := probe(t, base, "-grpc-addr", grpcAddr, "-token", creds.Full, "-tool", "search-memories", "-args", `{"query": ""}`)
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s", code, out)
		}
		for _, step := range []string{"mcp-2025  tools/call", "mcp-2026  tools/call", "rest      POST :call", "grpc      CallTool"} {
			if line := lineWith(out, step); !strings.Contains(line, "INVALID_INPUT") || !strings.Contains(line, "query") {
				t.Errorf("step %q does not name the refusal and its field: %q", step, line)
			}
		}
		if !strings.Contains(out, "FAIL: 4 of 12 steps failed") {
			t.Errorf("summary wrong:\n%s", out)
		}
	})

	t.Run("an unreachable transport", func(t *testing.T) {
		code, out, _ := probe(t, base, "-grpc-addr", closedPort(t), "-token", creds.Full, "-transports", "grpc", "-timeout", "3s")
		if code != 1 || !strings.Contains(lineWith(out, "grpc      ListTools"), "FAILED") {
			t.Fatalf("exit %d, want 1 and a failed ListTools\n%s", code, out)
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no URL", nil, "usage: toolsvc probe"},
		{"not a URL", []string{"127.0.0.1:8080"}, "is not an http:// or https:// URL"},
		{"arguments not an object", []string{base, "-args", "[1]"}, "-args: want a JSON object"},
		{"unknown transport", []string{base, "-transports", "rest,smtp"}, `unknown transport "smtp"`},
		{"unknown flag", []string{base, "-nope"}, "flag provided but not defined: -nope"},
	} {
		t.Run("usage: "+tc.name, func(t *testing.T) {
			code, out, errOut := probe(t, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q, want 2 and %q (stdout %q)", code, errOut, tc.want, out)
			}
		})
	}
}

func lineWith(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestProbeComparesToolLists: transports that list different tools to one
// credential fail the probe, naming the difference.
func TestProbeComparesToolLists(t *testing.T) {
	var out bytes.Buffer
	p := &prober{out: &out}
	p.list("rest", []string{"b-tool", "a-tool"})
	p.list("grpc", []string{"a-tool", "c-tool"})
	p.compare()
	if len(p.failed) != 1 || !strings.Contains(out.String(), "transports disagree: grpc lists 2 tools, rest 2 (only grpc: c-tool; only rest: b-tool)") {
		t.Errorf("failed %q, output %q", p.failed, out.String())
	}
}
