package e2e

import (
	"context"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/testserver"
)

// newAuthServer starts a server that requires credentials.
func newAuthServer(t *testing.T, backend string) (*testserver.Server, *testserver.Credentials) {
	t.Helper()
	c := testserver.WriteCredentials(t)
	s := testserver.New(t, testserver.Options{Backend: backend, Configure: func(cfg *server.Config) { cfg.AuthFile = c.AuthFile }})
	return s, c
}

// memoryMaker creates acme memories with the full key over gRPC.
func memoryMaker(s *testserver.Server, c *testserver.Credentials) func(t *testing.T) string {
	return func(t *testing.T) string {
		t.Helper()
		out, err := GRPC{S: s}.Call(context.Background(), c.Full, "add-memory", map[string]any{"content": "a memory to delete", "layer": "user"}, nil)
		if err != nil || out.Code != "OK" {
			t.Fatalf("add-memory: %v %v", err, out.Error)
		}
		return out.Result["data"].(map[string]any)["memoryId"].(string)
	}
}

func TestAuthMatrixGRPC(t *testing.T) {
	s, c := newAuthServer(t, testserver.SQLite)
	RunMatrix(t, c, memoryMaker(s, c), GRPC{S: s})
}

func TestAuthMatrixREST(t *testing.T) {
	s, c := newAuthServer(t, testserver.SQLite)
	RunMatrix(t, c, memoryMaker(s, c), REST{S: s})
}

func TestAuthMatrixMCP(t *testing.T) {
	s, c := newAuthServer(t, testserver.SQLite)
	RunMatrix(t, c, memoryMaker(s, c), MCP{S: s})
}
