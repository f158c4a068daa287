// Package tooltest runs the built-in tools end to end in tests: the real
// server wiring (package testserver, server.Builtin),
// an auth file with principals in two tenants, and helpers to call tools as
// one of them.
package tooltest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// API keys of the test principals (see authFile).
const (
	// Alice is in tenant acme with user, org and team ids (no project id).
	Alice = "key-acme-alice"
	// Bob is in tenant acme with user and org ids.
	Bob = "key-acme-bob"
	// Gina is in tenant globex with user, org, team and project ids.
	Gina = "key-globex-gina"
	// Service is in tenant acme with no identifiers at all.
	Service = "key-acme-service"
)

const authFile = `api_keys:
  - key: key-acme-alice
    subject: alice
    tenant: acme
    permissions: ["*"]
    identifiers: {user_id: alice, org_id: acme-org, team_id: acme-platform}
  - key: key-acme-bob
    subject: bob
    tenant: acme
    permissions: ["*"]
    identifiers: {user_id: bob, org_id: acme-org}
  - key: key-globex-gina
    subject: gina
    tenant: globex
    permissions: ["*"]
    identifiers: {user_id: gina, org_id: globex-org, team_id: globex-web, project_id: globex-shop}
  - key: key-acme-service
    subject: svc
    tenant: acme
    permissions: ["*"]
`

// Backends runs fn against SQLite and, when TOOLSVC_TEST_POSTGRES is set,
// PostgreSQL.
func Backends(t *testing.T, fn func(t *testing.T, backend string)) {
	t.Helper()
	backends := []string{testserver.SQLite}
	if os.Getenv("TOOLSVC_TEST_POSTGRES") != "" {
		backends = append(backends, testserver.Postgres)
	}
	for _, b := range backends {
		t.Run(b, func(t *testing.T) { fn(t, b) })
	}
}

// Start runs a server on backend with the test principals, serving the
// knowledge in knowledgeDir ("" for examples/knowledge).
func Start(t testing.TB, backend, knowledgeDir string) *testserver.Server {
	t.Helper()
	authPath := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(authPath, []byte(authFile), 0o600); err != nil {
		t.Fatal(err)
	}
	return testserver.New(t, testserver.Options{
		Backend: backend,
		Configure: func(c *server.Config) {
			c.AuthFile = authPath
			if knowledgeDir != "" {
				c.KnowledgeDir = knowledgeDir
			}
		},
	})
}

// As returns a context that calls as the principal of key, with extra
// metadata as header/value pairs (e.g. "x-session-id", "s1").
func As(ctx context.Context, key string, headers ...string) context.Context {
	return metadata.NewOutgoingContext(ctx, metadata.Pairs(append([]string{"authorization", "Bearer " + key}, headers...)...))
}

// ToolError returns the ToolError of a failed call, failing the test if
// err is nil.
func ToolError(t testing.TB, err error) *toolsvcv1.ToolError {
	t.Helper()
	if err == nil {
		t.Fatal("the call succeeded; want an error")
	}
	return toolerr.FromStatus(status.Convert(err))
}

// WantCode fails the test unless err is a ToolError with code.
func WantCode(t testing.TB, err error, code toolerr.Code) *toolsvcv1.ToolError {
	t.Helper()
	te := ToolError(t, err)
	if te.GetCode() != string(code) {
		t.Fatalf("error code = %s (%s), want %s", te.GetCode(), te.GetMessage(), code)
	}
	return te
}

// CopyDir copies the directory tree src to a new temporary directory and
// returns it.
func CopyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o750)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o600)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return dst
}
