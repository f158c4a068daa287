package e2e

import (
	"context"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
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

// TestSessionLayerIsBoundToItsOwner: a session id is a header any client
// may send, not a secret. Principal A (the full key, bound to user
// acme-user) stores a memory in session sess-777; principal B of the same
// tenant (the peer key, its own subject) naming the same session finds
// nothing of it and cannot delete it, while A finds it, on every
// transport. The agent layer, whose id is also the client's to choose, is
// bound the same way.
func TestSessionLayerIsBoundToItsOwner(t *testing.T) {
	for _, backend := range []string{testserver.SQLite, testserver.Postgres} {
		t.Run(backend, func(t *testing.T) { testSessionLayerIsBoundToItsOwner(t, backend) })
	}
}

func testSessionLayerIsBoundToItsOwner(t *testing.T, backend string) {
	s, c := newAuthServer(t, backend)
	for _, tr := range []Transport{GRPC{S: s}, REST{S: s}, MCP{S: s}} {
		t.Run(tr.Name(), func(t *testing.T) {
			for _, l := range []struct{ layer, header, id string }{
				{"session", "x-session-id", "sess-777-" + tr.Name()},
				{"agent", "x-agent-id", "agent-777-" + tr.Name()},
			} {
				ctx := context.Background()
				hdr := map[string]string{l.header: l.id}
				content := "owner-bound " + l.layer + " memory about the quarterly roadmap " + tr.Name()
				out, err := tr.Call(ctx, c.Full, "add-memory", map[string]any{"content": content, "layer": l.layer}, hdr)
				if err != nil || out.Code != "OK" {
					t.Fatalf("%s: add-memory as A: %v %v", l.layer, err, out.Error)
				}
				id := out.Result["data"].(map[string]any)["memoryId"].(string)
				search := map[string]any{"query": "quarterly roadmap " + tr.Name(), "layers": []any{l.layer}}
				found := func(token string) int {
					t.Helper()
					out, err := tr.Call(ctx, token, "search-memories", search, hdr)
					if err != nil || out.Code != "OK" {
						t.Fatalf("%s: search-memories: %v %v", l.layer, err, out.Error)
					}
					ms, _ := out.Result["data"].(map[string]any)["results"].([]any)
					return len(ms)
				}
				if n := found(c.Peer); n != 0 {
					t.Errorf("%s: principal B naming A's %s found %d memories, want 0", l.layer, l.header, n)
				}
				if n := found(c.Full); n != 1 {
					t.Errorf("%s: principal A found %d of its own memories, want 1", l.layer, n)
				}
				del, err := tr.Call(ctx, c.Peer, "delete-memory", map[string]any{"memoryId": id}, hdr)
				if err != nil {
					t.Fatal(err)
				}
				if del.Code == "OK" {
					t.Errorf("%s: principal B deleted A's memory", l.layer)
				}
			}
		})
	}
}
