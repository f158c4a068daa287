package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/tools/audit"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge"
	"github.com/toolsvc/toolsvc/internal/tools/knowledgesync"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
)

// fakeConn records the metadata of each call and fails it with err (nil:
// an empty response).
type fakeConn struct {
	mu  sync.Mutex
	md  metadata.MD
	err error
}

func (f *fakeConn) Invoke(ctx context.Context, _ string, _, _ any, _ ...grpc.CallOption) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.md, _ = metadata.FromOutgoingContext(ctx)
	return f.err
}

func (f *fakeConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "no streams")
}

// testRegistry is the registry of the built-in contracts (no
// implementations: the fake conn never reaches them).
func testRegistry(tb testing.TB) *registry.Registry {
	tb.Helper()
	reg, err := registry.New([]registry.Service{memory.Registration(nil), knowledge.Registration(nil), knowledgesync.Registration(nil), audit.Registration(nil)})
	if err != nil {
		tb.Fatalf("registry: %v", err)
	}
	return reg
}

func newTestGateway(tb testing.TB, conn grpc.ClientConnInterface, cfg Config) *Gateway {
	tb.Helper()
	g, err := New(context.Background(), conn, testRegistry(tb), cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return g
}

func TestOnlyAllowlistedHeadersReachTheChain(t *testing.T) {
	conn := &fakeConn{}
	g := newTestGateway(t, conn, Config{})
	for _, tc := range []struct {
		name string
		req  *http.Request
	}{
		{name: "grpc-gateway route", req: httptest.NewRequest(http.MethodPost, "/v1/knowledge:query", strings.NewReader(`{}`))},
		{name: "seed route", req: httptest.NewRequest(http.MethodPost, "/api/mcp/tool/call", strings.NewReader(`{"toolName":"query-knowledge"}`))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer k")
			r.Header.Set("X-Agent-Id", "agent-1")
			r.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
			r.Header.Set("Cookie", "session=secret")
			r.Header.Set("X-Forwarded-For", "203.0.113.9")
			r.Header.Set("Grpc-Metadata-X-Tenant", "other")
			r.Header.Set("Grpc-Timeout", "1n")
			r.Header.Set("X-Api-Key", "secret")
			w := httptest.NewRecorder()
			g.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d: %s", w.Code, w.Body)
			}
			conn.mu.Lock()
			md := conn.md
			conn.mu.Unlock()
			for k := range md {
				if !slices.Contains(wire.ForwardedHeaders, k) {
					t.Errorf("metadata %q reached the chain", k)
				}
			}
			for _, k := range []string{"authorization", "x-agent-id", "traceparent"} {
				if len(md.Get(k)) != 1 {
					t.Errorf("metadata %q = %v, want one value", k, md.Get(k))
				}
			}
		})
	}
}

func TestErrorStatusOfEveryCode(t *testing.T) {
	for _, code := range toolerr.Codes() {
		t.Run(string(code), func(t *testing.T) {
			e := toolerr.New(code, "something went wrong")
			if code == toolerr.RateLimited {
				e.RetryAfter = 1200 * time.Millisecond
			}
			conn := &fakeConn{err: toolerr.ToStatus(e, "trace-1").Err()}
			g := newTestGateway(t, conn, Config{ResourceMetadata: "https://api.example/.well-known/oauth-protected-resource"})
			w := httptest.NewRecorder()
			g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/sync/status", nil))
			if w.Code != code.HTTPStatus() {
				t.Fatalf("status = %d, want %d", w.Code, code.HTTPStatus())
			}
			var body struct{ Error map[string]any }
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if body.Error["code"] != string(code) || body.Error["traceId"] != "trace-1" || body.Error["retryable"] != code.Retryable() {
				t.Errorf("error = %v", body.Error)
			}
			switch code {
			case toolerr.RateLimited:
				if got := w.Header().Get("Retry-After"); got != "2" {
					t.Errorf("Retry-After = %q, want 2 (1.2 s rounded up)", got)
				}
			case toolerr.Unauthorized:
				want := `Bearer realm="toolsvc", resource_metadata="https://api.example/.well-known/oauth-protected-resource"`
				if got := w.Header().Get("WWW-Authenticate"); got != want {
					t.Errorf("WWW-Authenticate = %q, want %q", got, want)
				}
			}
		})
	}
	t.Run("status without a ToolError", func(t *testing.T) {
		g := newTestGateway(t, &fakeConn{err: status.Error(codes.Unavailable, "connection refused")}, Config{})
		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/sync/status", nil))
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"PROVIDER_ERROR"`) {
			t.Errorf("status %d, body %s", w.Code, w.Body)
		}
	})
}

func TestDecodeError(t *testing.T) {
	for _, tc := range []struct {
		name, msg, field, rule string
	}{
		{name: "unknown field", msg: "proto:\u00a0(line 1:14): unknown field \"bogus\"", field: "bogus", rule: "json.unknown_field"},
		{name: "wrong type", msg: "proto: (line 1:12): invalid value for string field content: 5", field: "content", rule: "json.type"},
		{name: "duplicate", msg: "proto: (line 1:20): duplicate field \"content\"", field: "content", rule: "json.duplicate_field"},
		{name: "query", msg: `parsing field "include_history": strconv.ParseBool: parsing "maybe": invalid syntax`, field: "includeHistory", rule: "query.type"},
		{name: "other", msg: "proto: syntax error (line 1:1): unexpected token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := decodeError(tc.msg)
			if te.GetCode() != string(toolerr.InvalidInput) || strings.Contains(te.GetMessage(), "proto:") {
				t.Errorf("error = %v", te)
			}
			if tc.field == "" {
				if len(te.GetFieldViolations()) != 0 {
					t.Errorf("violations = %v, want none", te.GetFieldViolations())
				}
				return
			}
			if v := te.GetFieldViolations(); len(v) != 1 || v[0].GetField() != tc.field || v[0].GetRule() != tc.rule {
				t.Errorf("violations = %v, want %s %s", v, tc.field, tc.rule)
			}
		})
	}
}
