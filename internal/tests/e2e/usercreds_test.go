package e2e

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

// TestUserCredentials: an MCP upstream marked user_credential.required gets
// each caller's own credential, stored through set-upstream-credential (a
// tool like any other, on every transport), never toolsvc's and never
// another caller's; a caller without one is refused with a hint naming
// the tool; nothing reads it back, the store keeps only ciphertext, and
// the debug log never shows it; delete-upstream-credential removes it.
func TestUserCredentials(t *testing.T) {
	up := startDeploys(t)
	var (
		mu   sync.Mutex
		seen []string
	)
	target, _ := url.Parse(strings.TrimSuffix(up.url, "/mcp"))
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		r.Header.Set("Authorization", "Bearer "+deploysToken) // the example server checks its one token
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close) // after toolsvc stops: its MCP client holds a stream open
	lastAuth := func() string { mu.Lock(); defer mu.Unlock(); return seen[len(seen)-1] }

	t.Setenv("DEPLOYS_TOKEN", deploysToken)
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	body := "upstreams:\n  - name: deploys\n    mcp: {url: " + front.URL + "/mcp}\n    credential: {bearer_env: DEPLOYS_TOKEN}\n    timeout: 5s\n" +
		"    identity: {plain_headers: true}\n    user_credential: {required: true}\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testserver.WriteCredentials(t)
	logs := &testenv.Buffer{}
	s := testserver.New(t, testserver.Options{
		Configure: func(cfg *server.Config) {
			cfg.AuthFile, cfg.UpstreamsFile = c.AuthFile, file
			cfg.CredentialKeys = []string{"k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}
			cfg.LogLevel = "debug"
		},
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	args := map[string]any{"service": "billing", "version": "1.4.2", "environment": "staging"}
	const pat = "pat-of-full-0123456789"

	for _, tr := range transportsOf(s) {
		out := call(t, tr, c.Full, "create-deployment", args)
		if out.Code != "UNAUTHORIZED" || !strings.Contains(out.Error["message"].(string), upstream.ToolSetCredential) {
			t.Fatalf("%s without a stored credential: %s %v, want UNAUTHORIZED naming %s", tr.Name(), out.Code, out.Error, upstream.ToolSetCredential)
		}
	}
	out := call(t, MCP{S: s}, c.Full, upstream.ToolSetCredential, map[string]any{"upstream": "deploys", "token": pat})
	if out.Code != "OK" || out.Result["data"].(map[string]any)["stored"] != true {
		t.Fatalf("%s: %s %v", upstream.ToolSetCredential, out.Code, out.Error)
	}
	if strings.Contains(fmt.Sprint(out.Result), pat) {
		t.Fatal("the answer to storing the credential shows it")
	}
	if out := call(t, GRPC{S: s}, c.Full, upstream.ToolSetCredential, map[string]any{"upstream": "tickets", "token": "x"}); out.Code != "INVALID_INPUT" {
		t.Fatalf("a credential for an upstream that needs none: %s", out.Code)
	}
	for _, tr := range transportsOf(s) {
		if out := call(t, tr, c.Full, "create-deployment", args); out.Code != "OK" {
			t.Fatalf("%s with a stored credential: %s %v", tr.Name(), out.Code, out.Error)
		}
		if got := lastAuth(); got != "Bearer "+pat {
			t.Fatalf("%s: the upstream got authorization %q, want the caller's own", tr.Name(), got)
		}
	}
	if out := call(t, REST{S: s}, c.OtherTenant, "create-deployment", args); out.Code != "UNAUTHORIZED" {
		t.Fatalf("another caller used full's credential: %s", out.Code)
	}
	// Every use is audited under the caller, with the tool, never the
	// credential: one record per forwarded call above.
	events, _, err := s.Store().ListAudit(t.Context(), store.AuditFilter{Tenant: "acme", Subject: "full", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	uses := 0
	for _, e := range events {
		if e.Code == upstream.CodeUserCredentialUsed {
			uses++
			if e.Tool != "create-deployment" || !strings.Contains(e.Reason, "deploys") || strings.Contains(fmt.Sprint(e), pat) {
				t.Errorf("the use's audit record: %+v", e)
			}
		}
	}
	if want := len(transportsOf(s)); uses != want {
		t.Errorf("%d audited uses of the caller's credential, want %d", uses, want)
	}
	for _, name := range []string{"get-upstream-credential", "list-upstream-credentials"} {
		if tool, _ := s.Registry().Get(name, ""); tool != nil {
			t.Fatalf("%s exists: a credential must never be read back", name)
		}
	}
	stored, err := s.Store().(store.UserCredentialStore).UserCredential(t.Context(), "acme", "full", "deploys")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored.Sealed, []byte(pat)) || stored.KeyID != "k1" {
		t.Fatalf("the store keeps %q under key %s: not sealed", stored.Sealed, stored.KeyID)
	}

	out = call(t, REST{S: s}, c.Full, upstream.ToolDeleteCredential, map[string]any{"upstream": "deploys"})
	if out.Code != "OK" || out.Result["data"].(map[string]any)["deleted"] != true {
		t.Fatalf("%s: %s %v", upstream.ToolDeleteCredential, out.Code, out.Error)
	}
	if out := call(t, GRPC{S: s}, c.Full, "create-deployment", args); out.Code != "UNAUTHORIZED" {
		t.Fatalf("after deleting the credential: %s", out.Code)
	}
	if strings.Contains(logs.String(), pat) {
		t.Fatal("the debug log shows the caller's credential")
	}
	if !strings.Contains(logs.String(), "caller's own credential forwarded") {
		t.Error("the use of a caller's credential is not logged")
	}
}
