package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/client"
	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestMain removes the binaries the tests built and fails the package if
// a test leaves a goroutine behind (a client not closed, a proxy running).
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBinaries()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left behind:\n%v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

const ticketsToken = "client-test-tickets-token"

// rateWindow is get-ticket's rate limit in this test's upstreams file: one
// call per principal in 1.5 s.
const rateWindow = 1500 * time.Millisecond

// upstreamsFile serves the tickets upstream at addr, with get-ticket's
// definition overlaid to allow one call per rateWindow.
func upstreamsFile(t *testing.T, addr string) string {
	t.Helper()
	body := fmt.Sprintf(`upstreams:
  - name: tickets
    address: %s
    tls: {mode: plaintext}
    credential: {bearer_env: TICKETS_TOKEN}
    # The example started without -toolsvc reads the caller from the plain
    # headers (docs/OPERATIONS.md, "Identity of callers to upstreams").
    identity: {plain_headers: true}
    timeout: 5s
    contracts: {reflection: true}
    overlays:
      tickets.v1.TicketService/GetTicket:
        name: get-ticket
        version: "1.0.0"
        title: Get ticket
        description: "Read one support ticket by its id. Use this to check a ticket's status, priority and who opened it before acting on it. Returns the ticket."
        permissions: ["tickets:read"]
        category: query
        response_time: fast
        idempotent: true
        read_only: true
        tags: [tickets, read]
        rate_limit: {max_calls: 1, window_ms: %d}
        examples:
          - description: A ticket that does not exist
            params_json: '{"ticket_id": "TCK-999999"}'
            expected_result_json: '{"code": "NOT_FOUND"}'
            expected_error_code: NOT_FOUND
`, addr, rateWindow.Milliseconds())
	path := filepath.Join(t.TempDir(), "upstreams.yaml")
	writeFile(t, path, []byte(body))
	return path
}

// attemptCounter counts the attempts of each method, as an interceptor
// inside the client's retries (given with WithDialOptions).
type attemptCounter struct{ calls, callTool atomic.Int64 }

func (a *attemptCounter) option() client.Option {
	return client.WithDialOptions(grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			a.calls.Add(1)
			if method == toolsvcv1.ToolService_CallTool_FullMethodName {
				a.callTool.Add(1)
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
}

// TestClientAgainstServe runs the client against a real `toolsvc serve`
// with TLS, an auth file and the example tickets upstream (its own
// process): each credential kind, a refused credential, the tools a
// credential may see, a validation error's field, a non-retryable error
// returned at once, a rate limit waited out as retryAfter says, and an
// upstream tool called by name.
func TestClientAgainstServe(t *testing.T) {
	creds := testserver.WriteCredentials(t)
	ca := authtest.NewCA(t, "server CA")
	tickets := startTickets(t, ticketsToken)
	s := startServe(t, serveOptions{CA: ca, Env: []string{"TICKETS_TOKEN=" + ticketsToken},
		Args: []string{"--auth-file", creds.AuthFile, "--db", filepath.Join(t.TempDir(), "t.db"), "--upstreams", upstreamsFile(t, tickets)}})
	dial := func(t *testing.T, opts ...client.Option) *client.Client {
		t.Helper()
		c, err := client.New(s.GRPCAddr, append([]client.Option{client.WithRootCAs(ca.Pool()), client.WithAgent("client-test", "1.0.0")}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ctx := context.Background()

	t.Run("api key, with an idempotency key added to a write", func(t *testing.T) {
		c := dial(t, client.WithAPIKey(creds.Full))
		resp, err := c.Memory().AddMemory(ctx, &memoryv1.AddMemoryRequest{Content: "The billing service stores invoices in PostgreSQL."})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetData().GetMemoryId() == "" || resp.GetMetadata().GetIdempotencyKey() == "" {
			t.Fatalf("add-memory: id %q, idempotency key %q; want both", resp.GetData().GetMemoryId(), resp.GetMetadata().GetIdempotencyKey())
		}
		search, err := c.Memory().SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "where are invoices stored"})
		if err != nil {
			t.Fatal(err)
		}
		if search.GetMetadata().GetIdempotencyKey() != "" {
			t.Errorf("search-memories carried idempotency key %q: a query needs none", search.GetMetadata().GetIdempotencyKey())
		}
	})

	t.Run("static JWT", func(t *testing.T) {
		c := dial(t, client.WithJWT(creds.JWT))
		res, err := c.CallTool(client.WithCorrelationID(ctx, "client-test-correlation"), "search-memories", map[string]any{"query": "invoices"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Metadata.GetTool() != "search-memories" || res.Hints == nil || res.Data == nil {
			t.Fatalf("CallTool = %+v", res)
		}
		if res.Metadata.GetCorrelationId() != "client-test-correlation" {
			t.Errorf("correlation id %q: the per-call header did not reach the server", res.Metadata.GetCorrelationId())
		}
	})

	t.Run("token source refreshed after a refusal", func(t *testing.T) {
		var asked atomic.Int64
		src := client.TokenSourceFunc(func(context.Context) (client.Token, error) {
			if asked.Add(1) == 1 {
				return client.Token{Value: creds.ExpiredJWT}, nil // the server refuses it
			}
			return client.Token{Value: creds.JWT, Expiry: time.Now().Add(time.Hour)}, nil
		})
		c := dial(t, client.WithTokenSource(src))
		for range 2 {
			if _, err := c.CallTool(ctx, "search-memories", map[string]any{"query": "invoices"}); err != nil {
				t.Fatal(err)
			}
		}
		if n := asked.Load(); n != 2 {
			t.Errorf("the token source was asked %d times, want 2 (the refused token, then one cached for both calls)", n)
		}
	})

	t.Run("trace propagated once the process has a provider", func(t *testing.T) {
		tp := sdktrace.NewTracerProvider()
		defer func() { _ = tp.Shutdown(context.Background()) }()
		prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
		otel.SetTracerProvider(tp)
		otel.SetTextMapPropagator(propagation.TraceContext{})
		defer func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) }()
		c := dial(t, client.WithAPIKey(creds.Full))
		sctx, span := tp.Tracer("client-test").Start(ctx, "caller")
		res, err := c.CallTool(sctx, "search-memories", map[string]any{"query": "invoices"})
		span.End()
		if err != nil {
			t.Fatal(err)
		}
		if want := span.SpanContext().TraceID().String(); res.Metadata.GetTraceId() != want {
			t.Errorf("the server's trace id %q, want the caller's %q", res.Metadata.GetTraceId(), want)
		}
	})

	t.Run("refused credential", func(t *testing.T) {
		c := dial(t, client.WithAPIKey(creds.Bad))
		_, err := c.CallTool(ctx, "search-memories", map[string]any{"query": "invoices"})
		var e *client.Error
		if !errors.As(err, &e) || !client.IsUnauthorized(err) {
			t.Fatalf("err = %v, want an *Error UNAUTHORIZED", err)
		}
		if e.Retryable || e.Attempts != 1 {
			t.Errorf("retryable %v after %d attempts, want not retryable, 1 attempt", e.Retryable, e.Attempts)
		}
		if !hasAction(e.Hints, "provide-credential") {
			t.Errorf("hints %v do not suggest provide-credential", e.Hints.GetSuggestedNextActions())
		}
	})

	t.Run("the tools a credential may see", func(t *testing.T) {
		full, err := dial(t, client.WithAPIKey(creds.Full)).ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if names := toolNames(full); !slices.Contains(names, "add-memory") || !slices.Contains(names, "create-ticket") {
			t.Fatalf("ListTools with every permission = %v, want the built-in and upstream tools", names)
		}
		none := dial(t, client.WithAPIKey(creds.NoPermission))
		seen, err := none.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if names := toolNames(seen); slices.Contains(names, "add-memory") {
			t.Errorf("ListTools without permissions = %v, includes add-memory", names)
		}
		if _, err := none.CallTool(ctx, "add-memory", map[string]any{"content": "not allowed to write this"}); !client.IsNotFound(err) {
			t.Errorf("add-memory without its permission: %v, want NOT_FOUND (a tool it cannot see)", err)
		}
	})

	t.Run("validation error names the field", func(t *testing.T) {
		var n attemptCounter
		c := dial(t, client.WithAPIKey(creds.Full), n.option())
		_, err := c.Memory().AddMemory(ctx, &memoryv1.AddMemoryRequest{Content: ""})
		var e *client.Error
		if !errors.As(err, &e) || e.Code != client.CodeInvalidInput {
			t.Fatalf("err = %v, want INVALID_INPUT", err)
		}
		if !slices.ContainsFunc(e.FieldViolations, func(v *toolsvcv1.FieldViolation) bool { return v.GetField() == "content" }) {
			t.Errorf("field violations %v do not name content", e.FieldViolations)
		}
		if n.calls.Load() != 1 {
			t.Errorf("sent %d times, want once", n.calls.Load())
		}
	})

	t.Run("non-retryable error returned at once", func(t *testing.T) {
		var n attemptCounter
		c := dial(t, client.WithAPIKey(creds.Full), n.option())
		start := time.Now()
		_, err := c.Knowledge().ShowKnowledge(ctx, &knowledgev1.ShowKnowledgeRequest{Id: "adr-999-no-such-item"})
		var e *client.Error
		if !errors.As(err, &e) || !client.IsNotFound(err) || e.Retryable {
			t.Fatalf("err = %v, want a non-retryable NOT_FOUND", err)
		}
		if n.calls.Load() != 1 || e.Attempts != 1 {
			t.Errorf("sent %d times (Attempts %d), want once", n.calls.Load(), e.Attempts)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %s: a non-retryable error waits for nothing", d)
		}
		if !hasAction(e.Hints, "query-knowledge") {
			t.Errorf("hints %v do not suggest query-knowledge", e.Hints.GetSuggestedNextActions())
		}
	})

	t.Run("upstream tool called by name", func(t *testing.T) {
		c := dial(t, client.WithAPIKey(creds.Full))
		res, err := c.CallTool(ctx, "create-ticket", map[string]any{"title": "Export button fails", "priority": "high"})
		if err != nil {
			t.Fatal(err)
		}
		var data struct {
			Ticket struct{ ID, Status string }
		}
		if err := res.Decode(&data); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(data.Ticket.ID, "TCK-") || data.Ticket.Status != "open" {
			t.Fatalf("create-ticket data = %+v", data)
		}
		// create-ticket is not linked into this process: the client read
		// its contract from the server, saw a mutation and added a key.
		if res.Metadata.GetTool() != "create-ticket" || res.Metadata.GetIdempotencyKey() == "" {
			t.Errorf("metadata = %v, want tool create-ticket with an idempotency key", res.Metadata)
		}
	})

	t.Run("rate limit waited out as retryAfter says", func(t *testing.T) {
		var n attemptCounter
		c := dial(t, client.WithAPIKey(creds.Full), n.option())
		created, err := c.CallTool(ctx, "create-ticket", map[string]any{"title": "Rate limited reads", "priority": "low"})
		if err != nil {
			t.Fatal(err)
		}
		id := created.Data.GetFields()["ticket"].GetStructValue().GetFields()["id"].GetStringValue()
		first := time.Now()
		if _, err := c.CallTool(ctx, "get-ticket", map[string]any{"ticketId": id}); err != nil {
			t.Fatal(err)
		}
		// Not retried: the server's word as the caller sees it.
		_, err = c.CallTool(client.WithMaxAttempts(ctx, 1), "get-ticket", map[string]any{"ticketId": id})
		var e *client.Error
		if !errors.As(err, &e) || e.Code != client.CodeRateLimited || !e.Retryable || e.RetryAfter <= 0 || e.RetryAfter > rateWindow {
			t.Fatalf("second get-ticket: %v (%+v), want RATE_LIMITED, retryable, 0 < retryAfter <= %s", err, e, rateWindow)
		}
		// Retried: the client waits out retryAfter, then succeeds.
		before := n.callTool.Load()
		res, err := c.CallTool(ctx, "get-ticket", map[string]any{"ticketId": id})
		if err != nil {
			t.Fatalf("get-ticket with retries: %v", err)
		}
		if waited := time.Since(first); waited < rateWindow {
			t.Errorf("answered %s after the first call, before the window of %s ended", waited, rateWindow)
		}
		if sent := n.callTool.Load() - before; sent != 2 {
			t.Errorf("sent %d times, want 2 (refused once, then after retryAfter)", sent)
		}
		if res.Metadata.GetTool() != "get-ticket" {
			t.Errorf("metadata = %v", res.Metadata)
		}
	})
}

// TestMutualTLS: a client certificate the auth file maps is the caller's
// credential, with no API key or token.
func TestMutualTLS(t *testing.T) {
	creds := testserver.WriteCredentials(t)
	f, err := os.OpenFile(creds.AuthFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprint(f, `client_certs:
  - uri_san: spiffe://test.invalid/ns/prod/sa/billing
    subject: billing-service
    tenant: acme
    permissions: ["memory:read", "memory:write", "knowledge:read"]
    identifiers: {org_id: acme-org, team_id: acme-team, project_id: acme-project, user_id: acme-user}
`)
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	ca, clients := authtest.NewCA(t, "server CA"), authtest.NewCA(t, "client CA")
	clientCA := filepath.Join(t.TempDir(), "clients.pem")
	writeFile(t, clientCA, clients.PEM)
	cert := clients.Issue(t, authtest.CertSpec{Client: true, URIs: []string{"spiffe://test.invalid/ns/prod/sa/billing"}})
	s := startServe(t, serveOptions{CA: ca, ProbeCert: &cert.TLS,
		Args: []string{"--auth-file", creds.AuthFile, "--db", filepath.Join(t.TempDir(), "t.db"), "--tls-client-ca", clientCA}})
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	writeFile(t, certFile, cert.CertPEM)
	writeFile(t, keyFile, cert.KeyPEM)
	caFile := filepath.Join(dir, "ca.pem")
	writeFile(t, caFile, ca.PEM)

	c, err := client.New(s.GRPCAddr, client.WithCAFile(caFile), client.WithClientCertificateFiles(certFile, keyFile))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Memory().AddMemory(ctx, &memoryv1.AddMemoryRequest{Content: "Written by the billing service's certificate."}); err != nil {
		t.Fatalf("add-memory by certificate: %v", err)
	}
	tools, err := c.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if names := toolNames(tools); !slices.Contains(names, "search-memories") || slices.Contains(names, "sync-knowledge") {
		t.Errorf("ListTools by certificate = %v, want its grants only", names)
	}
}

func toolNames(ts []*toolsvcv1.ToolDefinition) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.GetName())
	}
	return out
}

func hasAction(h *toolsvcv1.AgentHints, action string) bool {
	return slices.ContainsFunc(h.GetSuggestedNextActions(), func(a *toolsvcv1.SuggestedAction) bool { return a.GetAction() == action })
}
