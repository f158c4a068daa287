package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// notesServer is a Go SDK server (not toolsvc's code) of one revision
// (2025-11-25 with sessions, or 2026-07-28 without) with one tool, one resource it reports changes of, and
// one prompt; it counts the resources/subscribe and resources/unsubscribe
// it is sent.
type notesServer struct {
	srv               *mcp.Server
	url               string
	subscribes, unsub atomic.Int32
}

func newNotesServer(t *testing.T, revision string) *notesServer {
	t.Helper()
	n := &notesServer{}
	n.srv = mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, &mcp.ServerOptions{
		SupportedProtocolVersions: []string{revision},
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
			n.subscribes.Add(1)
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error {
			n.unsub.Add(1)
			return nil
		},
	})
	tool := weatherTool("Get the weather forecast of a city. Returns one sentence.", false)
	n.srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"forecast": "Sunny."}}, nil
	})
	n.addNote("notes://a")
	n.srv.AddPrompt(&mcp.Prompt{Name: "summarize", Description: "Summarize the notes."}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarize."}}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return n.srv },
		&mcp.StreamableHTTPOptions{Stateless: revision == "2026-07-28"}))
	t.Cleanup(func() { hs.Close(); closeSessions(n.srv) })
	n.url = hs.URL + "/mcp"
	return n
}

func (n *notesServer) addNote(uri string) {
	n.srv.AddResource(&mcp.Resource{URI: uri, Name: strings.TrimPrefix(uri, "notes://"), MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "a note"}}}, nil
		})
}

// bearer adds an API key to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// heard are the notifications a Go SDK client received.
type heard struct {
	updated, resources, prompts chan string
}

// sdkClient connects a Go SDK client (revision rev) to toolsvc's /mcp
// with key.
func sdkClient(t *testing.T, s *testserver.Server, key, rev string) (*mcp.ClientSession, heard) {
	t.Helper()
	h := heard{updated: make(chan string, 64), resources: make(chan string, 64), prompts: make(chan string, 64)}
	c := mcp.NewClient(&mcp.Implementation{Name: "sdk-" + rev, Version: "1.8.0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			h.updated <- req.Params.URI
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { h.resources <- "changed" },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { h.prompts <- "changed" },
	})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: s.HTTP + "/mcp", HTTPClient: &http.Client{Transport: bearer{key}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		t.Fatalf("connect (%s): %v", rev, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, h
}

// drained reports whether ch holds want, taking what it holds.
func drained(ch chan string, want string) bool {
	for {
		select {
		case got := <-ch:
			if got == want {
				return true
			}
		default:
			return false
		}
	}
}

// both reports whether a and b each held want, in one poll or over
// several (seen keeps what an earlier poll found).
func both(seen *[2]bool, a, b chan string, want string) bool {
	seen[0] = seen[0] || drained(a, want)
	seen[1] = seen[1] || drained(b, want)
	return seen[0] && seen[1]
}

// TestResourceSubscriptionsRelayed: Go SDK clients of both revisions
// (2025-11-25 with resources/subscribe on a session, 2026-07-28 with
// resourceSubscriptions on subscriptions/listen) watch an upstream Go SDK
// server's resource through toolsvc. The upstream is subscribed once for
// both and unsubscribed when the last one goes (an unsubscribe, the
// listen stream's end, a session's end); its updates reach every
// subscribed client under the served URI; a caller without the granted
// permission and a resource that reports no changes are refused; and the
// upstream's resources and prompts list changes reach the 2026 client on
// its subscriptions/listen stream. A 2026-07-28 upstream's list changes
// (heard on toolsvc's own subscriptions/listen to it) reach both clients;
// a subscription to its resources is refused, saying why.
func TestResourceSubscriptionsRelayed(t *testing.T) {
	up := newNotesServer(t, "2025-11-25")
	up26 := newNotesServer(t, "2026-07-28")
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	overlay := "    overlays:\n      get-forecast:\n        examples: [{description: Paris., params_json: '{\"city\": \"Paris\"}', expected_result_json: '{}'}]\n"
	body := "upstreams:\n  - name: notes\n    mcp: {url: " + up.url + "}\n    allow_claims: [read_only]\n" +
		"    resources: {permission: notes:read}\n    prompts: {permission: notes:prompt}\n" + overlay +
		"  - name: modern\n    mcp: {url: " + up26.url + "}\n    allow_claims: [read_only]\n    naming: {namespace: modern}\n" +
		"    resources: {permission: modern:read}\n" + overlay
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testserver.WriteCredentials(t)
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) {
		cfg.AuthFile, cfg.UpstreamsFile = c.AuthFile, file
	}})
	operatorKeys.Store(s, c.Full)
	t.Cleanup(func() { operatorKeys.Delete(s) })
	ctx := t.Context()
	const uri = "notes+notes://a"

	classic, ch := sdkClient(t, s, c.Full, "2025-11-25")
	if caps := classic.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe || !caps.Resources.ListChanged {
		t.Fatalf("2025 capabilities: resources %+v", caps.Resources)
	}
	modern, mh := sdkClient(t, s, c.Full, "2026-07-28")
	if caps := modern.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe || caps.Prompts == nil || !caps.Prompts.ListChanged {
		t.Fatalf("2026 capabilities: resources %+v prompts %+v", caps.Resources, caps.Prompts)
	}

	if err := classic.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("2025 subscribe: %v", err)
	}
	if err := modern.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("2026 subscribe: %v", err)
	}
	// Each change the upstream reports reaches both, under the served URI.
	var seen [2]bool
	eventually(t, func() bool {
		_ = up.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "notes://a"})
		time.Sleep(100 * time.Millisecond)
		return both(&seen, ch.updated, mh.updated, uri)
	}, "both clients hear the upstream's update")
	if n := up.subscribes.Load(); n != 1 {
		t.Fatalf("the upstream was sent %d resources/subscribe for two clients of one URI, want 1", n)
	}

	// Refusals: no permission (the chain's, over MCP), a resource that
	// reports no changes, no URI.
	noperm, _ := sdkClient(t, s, c.NoPermission, "2025-11-25")
	if err := noperm.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err == nil {
		t.Fatal("subscribe without notes:read answered")
	}
	// Audited as the read that authorized it: allowed for the caller
	// with the grant, denied for the one without.
	eventually(t, func() bool {
		allowed, _, err := s.Store().ListAudit(ctx, store.AuditFilter{Tenant: "acme", Tool: "show-notes-resource", Decision: "allow", Limit: store.MaxAuditLimit})
		if err != nil {
			t.Fatal(err)
		}
		denied, _, err := s.Store().ListAudit(ctx, store.AuditFilter{Tenant: "acme", Tool: "show-notes-resource", Subject: "noperm", Limit: store.MaxAuditLimit})
		if err != nil {
			t.Fatal(err)
		}
		return len(allowed) >= 2 && allowed[0].Transport == "mcp" && len(denied) >= 1 && denied[0].Decision == "deny"
	}, "the subscriptions' reads audited")
	if err := classic.Subscribe(ctx, &mcp.SubscribeParams{URI: "toolsvc://tools/get-notes-forecast/output-schema"}); err == nil || !strings.Contains(err.Error(), "resource") {
		t.Fatalf("subscribe to a resource no provider relays: %v", err)
	}
	if err := classic.Subscribe(ctx, &mcp.SubscribeParams{URI: ""}); err == nil || !strings.Contains(err.Error(), `"uri" is required`) {
		t.Fatalf("subscribe without a uri: %v", err)
	}

	// The upstream's list changes reach the 2026 client on its listen
	// stream (and the 2025 one on its GET stream).
	up.addNote("notes://b")
	seen = [2]bool{}
	eventually(t, func() bool { return both(&seen, mh.resources, ch.resources, "changed") }, "resources list_changed heard by both")
	up.srv.AddPrompt(&mcp.Prompt{Name: "outline"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Outline."}}}}, nil
	})
	eventually(t, func() bool { return drained(mh.prompts, "changed") }, "prompts list_changed heard by the 2026 client")

	// The 2026-07-28 upstream: its list changes are relayed, its
	// resources cannot be watched yet (and the client is told why).
	if err := classic.Subscribe(ctx, &mcp.SubscribeParams{URI: "modern+notes://a"}); err == nil || !strings.Contains(err.Error(), "2026-07-28") {
		t.Fatalf("subscribe to a 2026 upstream's resource: %v", err)
	}
	up26.addNote("notes://c")
	seen = [2]bool{}
	eventually(t, func() bool { return both(&seen, mh.resources, ch.resources, "changed") },
		"the 2026 upstream's resources list_changed heard by both")

	// One unsubscribes: the upstream keeps its subscription for the other.
	if err := classic.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatalf("2025 unsubscribe: %v", err)
	}
	if n := up.unsub.Load(); n != 0 {
		t.Fatalf("the upstream was unsubscribed while a client still watches (%d)", n)
	}
	eventually(t, func() bool {
		_ = up.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "notes://a"})
		time.Sleep(100 * time.Millisecond)
		return drained(mh.updated, uri)
	}, "the 2026 client still hears updates")
	// The last one goes (its listen stream ends): the upstream is
	// unsubscribed, and nothing is left.
	if err := modern.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatalf("2026 unsubscribe: %v", err)
	}
	eventually(t, func() bool {
		return up.unsub.Load() == 1 && s.MCP().Watched() == 0
	}, "the upstream unsubscribed once the last client went")

	// A session that ends holding a subscription drops it.
	third, _ := sdkClient(t, s, c.Full, "2025-11-25")
	if err := third.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("third subscribe: %v", err)
	}
	if n := up.subscribes.Load(); n != 2 {
		t.Fatalf("resources/subscribe sent %d times, want 2", n)
	}
	if err := third.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		return up.unsub.Load() == 2 && s.MCP().Watched() == 0
	}, "the session's end unsubscribed the upstream")
}
