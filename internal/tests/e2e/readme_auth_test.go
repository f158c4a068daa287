package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// readmeAuthExample returns the README's auth file example (the first
// yaml block of "### Credentials") with each `key_sha256: "…"` replaced by
// the hash of keys[i], in order.
func readmeAuthExample(t *testing.T, keys ...string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(testserver.KnowledgeDir(t))), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "### Credentials")
	if !ok {
		t.Fatal("README has no Credentials section")
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(section)
	if m == nil {
		t.Fatal("README's Credentials section has no yaml block")
	}
	body := m[1]
	for _, k := range keys {
		sum := sha256.Sum256([]byte(k))
		body = strings.Replace(body, `key_sha256: "…"`, `key_sha256: "`+hex.EncodeToString(sum[:])+`"`, 1)
	}
	// The example's JWT section names a JWKS file and an issuer this test
	// does not run; API keys are what it is about.
	body, _, _ = strings.Cut(body, "jwt:")
	return body
}

// TestReadmeAuthExampleRunsTheReadmeCalls: the README's own auth file runs
// the README's add-memory and search-memories calls as written, for the
// user's key and for the service key acting for a user; the
// service key without a user gets an error that names the layers it can
// use and suggests one.
func TestReadmeAuthExampleRunsTheReadmeCalls(t *testing.T) {
	const userKey, serviceKey = "tsk_readme_user_0123456789", "tsk_readme_svc_0123456789"
	auth := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(auth, []byte(readmeAuthExample(t, userKey, serviceKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := testserver.New(t, testserver.Options{Configure: func(c *server.Config) { c.AuthFile = auth }})
	add := map[string]any{"content": "User prefers functional programming patterns over OOP", "tags": []any{"preferences"}}
	for _, tr := range transportsOf(s) {
		t.Run(tr.Name(), func(t *testing.T) {
			if o := call(t, tr, userKey, "add-memory", add); o.Code != "OK" {
				t.Fatalf("the user's key: add-memory %s %v", o.Code, o.Error)
			}
			if o := call(t, tr, userKey, "search-memories", map[string]any{"query": "programming preferences"}); o.Code != "OK" {
				t.Fatalf("the user's key: search-memories %s %v", o.Code, o.Error)
			}
			o, err := tr.Call(t.Context(), serviceKey, "add-memory", add, map[string]string{"x-user-id": "ana"})
			if err != nil || o.Code != "OK" {
				t.Fatalf("the service key acting for ana: add-memory %v %s %v", err, o.Code, o.Error)
			}
			o = call(t, tr, serviceKey, "add-memory", add)
			if o.Code != "INVALID_INPUT" {
				t.Fatalf("the service key without a user: %s, want INVALID_INPUT", o.Code)
			}
			msg, _ := o.Error["message"].(string)
			for _, want := range []string{"identifiers.user_id", "act_for_users: true", "project, team, org, company"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			hints, _ := o.Error["agentHints"].(map[string]any)
			next := suggests(hints, "add-memory", "exploration")
			args, _ := next["data"].(map[string]any)
			if args["layer"] != "project" {
				t.Errorf("suggested next call %v, want add-memory with layer project", next)
			}
			if r, _ := hints["reasoning"].(string); strings.Contains(r, "schema") || !strings.Contains(r, "layer") {
				t.Errorf("reasoning %q: want the refused field, not a schema rule", r)
			}
			o = call(t, tr, serviceKey, "add-memory", map[string]any{"content": add["content"], "layer": "project"})
			if o.Code != "OK" {
				t.Errorf("the suggested layer: %s %v", o.Code, o.Error)
			}
		})
	}
}
