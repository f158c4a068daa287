package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

const explainAuthFile = `tool_sets:
  - name: sync
    include:
      - tag: sync
roles:
  - name: memory-writer
    permissions: ["memory:read", "memory:write"]
  - name: operator
    permissions: ["policy:read"]
api_keys:
  - key: "explain-test-operator-key-01"
    subject: ops
    tenant: acme
    roles: [operator]
  - key: "explain-test-reader-key-0002"
    subject: reader
    tenant: acme
    permissions: ["memory:read", "sync:read"]
    tool_sets: [sync]
`

// TestExplainCommand runs toolsvc explain against a running toolsvc: the
// rule that refuses a call is printed and the exit status is 1; an
// allowed call exits 0; a credential without policy:read is a clear
// error (exit 2).
func TestExplainCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(path, []byte(explainAuthFile), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := serveForProbe(t, &testserver.Credentials{AuthFile: path})
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		wants []string
	}{
		{"set refuses", []string{"-token", "explain-test-operator-key-01", "-subject", "reader", "-tool", "search-memories", base}, 1,
			[]string{"caller api_keys[1]", "search-memories 1.1.0: REFUSED by rule tool_set (NOT_FOUND): tool_set: not in tool set \"sync\"", "sees 1 tool(s): get-sync-status 1.0.0"}},
		{"permission refuses", []string{"-token", "explain-test-operator-key-01", "-tenant", "acme", "-permissions", "memory:read", "-tool", "add-memory", base}, 1,
			[]string{"caller jwt", "REFUSED by rule permission (NOT_FOUND): permission: missing memory:write", "granted by the roles memory-writer"}},
		{"role allows", []string{"-token", "explain-test-operator-key-01", "-tenant", "acme", "-roles", "memory-writer", "-tool", "add-memory", base}, 0,
			[]string{"roles:       memory-writer", "add-memory 1.0.0: ALLOWED"}},
		{"no policy:read", []string{"-token", "explain-test-reader-key-0002", "-subject", "reader", base}, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append([]string{"explain"}, tc.args...), nil, &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out.String(), errOut.String())
			}
			for _, w := range tc.wants {
				if !strings.Contains(out.String(), w) {
					t.Errorf("no %q in:\n%s", w, out.String())
				}
			}
			if tc.code == 2 && !strings.Contains(errOut.String(), "HTTP 403 FORBIDDEN") {
				t.Errorf("stderr: %s", errOut.String())
			}
		})
	}
}

// TestLintAuthFile: toolsvc lint -auth-file refuses, each with its line, a
// role that grants nothing known, a tool set that holds no tool, and a
// grant of a role or a set the file does not define.
func TestLintAuthFile(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		code       int
		wants      []string
	}{
		{"clean", explainAuthFile, 0, []string{"PASS: auth file"}},
		{"role grants nothing known", strings.Replace(explainAuthFile, `["memory:read", "memory:write"]`, `["memroy:read"]`, 1), 1,
			[]string{`line 6: roles[0] (role "memory-writer"): grants nothing known`}},
		{"set holds no tool", strings.Replace(explainAuthFile, "tag: sync", "tag: no-such-tag", 1), 1,
			[]string{`line 2: tool_sets[0] (set "sync"): holds no tool`}},
		{"unknown role", strings.Replace(explainAuthFile, "roles: [operator]", "roles: [operater]", 1), 1,
			[]string{`line 14: api_keys[0]: roles[0] "operater" is not a role of this file (defined: memory-writer, operator)`}},
		{"unknown set", strings.Replace(explainAuthFile, "tool_sets: [sync]", "tool_sets: [snyc]", 1), 1,
			[]string{`line 19: api_keys[1]: tool_sets[0] "snyc" is not a tool set of this file (defined: sync)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "auth.yaml")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			code := run(context.Background(), []string{"lint", "--knowledge-dir", repoKnowledge(t), "-auth-file", path}, nil, &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out.String(), errOut.String())
			}
			for _, w := range tc.wants {
				if !strings.Contains(out.String(), w) {
					t.Errorf("no %q in:\n%s", w, out.String())
				}
			}
		})
	}
}
