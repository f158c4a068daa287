package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	ticketsv1 "github.com/toolsvc/toolsvc/examples/upstreams/tickets/gen/tickets/v1"
	"github.com/toolsvc/toolsvc/examples/upstreams/tickets/ticketsrv"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// ticketsToken is the credential toolsvc presents to the example upstream
// (never a caller's).
const ticketsToken = "tickets-upstream-secret"

// tickets is a running example upstream.
type tickets struct {
	addr string
	impl *ticketsrv.Server
	srv  *grpc.Server
}

type ticketsOpts struct {
	noReflection bool
	junk         bool
	opts         ticketsrv.Options
}

// startTickets runs the example upstream on a loopback port.
func startTickets(t testing.TB, o ticketsOpts) *tickets {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if o.junk {
		opts = append(opts, grpc.ForceServerCodec(ticketsrv.JunkCodec{}))
	}
	srv := grpc.NewServer(opts...)
	if o.opts.Token == "" {
		o.opts.Token = ticketsToken
	}
	impl := ticketsrv.New(o.opts)
	impl.Register(srv)
	if !o.noReflection {
		if err := ticketsrv.RegisterReflection(srv); err != nil {
			t.Fatal(err)
		}
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return &tickets{addr: lis.Addr().String(), impl: impl, srv: srv}
}

// upstreamsFile writes an upstreams file for one upstream named tickets;
// extra is appended to its entry (indented by four spaces).
func upstreamsFile(t testing.TB, addr, contracts, extra string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(ticketsToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if contracts == "" {
		contracts = "reflection: true"
	}
	body := fmt.Sprintf(`upstreams:
  - name: tickets
    address: %q
    tls: {mode: plaintext}
    credential: {bearer_file: token}
    timeout: 2s
    contracts: {%s}
    identity: {plain_headers: true}
%s`, addr, contracts, extra)
	path := filepath.Join(dir, "upstreams.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func newUpstreamServer(t *testing.T, file string) (*testserver.Server, *testserver.Credentials) {
	t.Helper()
	c := testserver.WriteCredentials(t)
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) {
		cfg.AuthFile = c.AuthFile
		cfg.UpstreamsFile = file
	}})
	operatorKeys.Store(s, c.Full)
	t.Cleanup(func() { operatorKeys.Delete(s) })
	return s, c
}

// operatorKeys are the keys healthz reads the operator view with, by
// server (none: development mode, where the anonymous caller may).
var operatorKeys sync.Map

func transportsOf(s *testserver.Server) []Transport {
	return []Transport{GRPC{S: s}, REST{S: s}, MCP{S: s}}
}

func call(t *testing.T, tr Transport, token, tool string, args map[string]any) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := tr.Call(ctx, token, tool, args, nil)
	if err != nil {
		t.Fatalf("%s %s: transport error: %v", tr.Name(), tool, err)
	}
	return out
}

// healthz reads the operator view of /healthz (a key holding health:read).
func healthz(t *testing.T, s *testserver.Server) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.HTTP+"/healthz?view=operator", nil)
	if err != nil {
		t.Fatal(err)
	}
	if key, ok := operatorKeys.Load(s); ok {
		req.Header.Set("Authorization", "Bearer "+key.(string))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("healthz: %v: %s", err, b)
	}
	return out
}

func upstreamHealth(t *testing.T, s *testserver.Server) map[string]any {
	t.Helper()
	ups, _ := healthz(t, s)["upstreams"].([]any)
	if len(ups) != 1 {
		t.Fatalf("healthz upstreams = %v, want one", ups)
	}
	return ups[0].(map[string]any)
}

// TestUpstreamToolsOnEveryTransport: the example upstream's tools are
// listed and called on gRPC, REST and MCP through the one chain, with the
// same data and hints; the upstream sees toolsvc's credential and the
// caller's principal as metadata, never the caller's token; the RPC
// without a tool option is not served.
func TestUpstreamToolsOnEveryTransport(t *testing.T) {
	up := startTickets(t, ticketsOpts{})
	s, c := newUpstreamServer(t, upstreamsFile(t, up.addr, "", ""))

	for _, name := range []string{"create-ticket", "get-ticket"} {
		tool, err := s.Registry().Get(name, "")
		if err != nil {
			t.Fatalf("%s not served: %v", name, err)
		}
		if tool.Source != "upstream tickets" {
			t.Fatalf("%s source = %q", name, tool.Source)
		}
	}
	for _, tr := range transportsOf(s) {
		if out := call(t, tr, c.Full, "purge-tickets", map[string]any{}); out.Code != "NOT_FOUND" {
			t.Fatalf("%s: an RPC without the tool option was served: %v", tr.Name(), out)
		}
	}
	var got []map[string]any
	for _, tr := range transportsOf(s) {
		out := call(t, tr, c.Full, "create-ticket", map[string]any{"title": "Export button fails", "priority": "high"})
		if out.Code != "OK" {
			t.Fatalf("%s create-ticket: %s %v", tr.Name(), out.Code, out.Error)
		}
		ticket := out.Result["data"].(map[string]any)["ticket"].(map[string]any)
		if ticket["tenant"] != "acme" || ticket["openedBy"] != "full" || ticket["status"] != "open" {
			t.Fatalf("%s: ticket = %v, want tenant acme opened by full", tr.Name(), ticket)
		}
		hints := out.Result["agentHints"].(map[string]any)
		if hints["confidence"] != 1.0 || hints["sourceQuality"] != "high" {
			t.Fatalf("%s: the upstream's hints were not passed: %v", tr.Name(), hints)
		}
		md := up.impl.LastMetadata()
		if a := md.Get("authorization"); len(a) != 1 || a[0] != "Bearer "+ticketsToken {
			t.Fatalf("%s: upstream saw authorization %q, want toolsvc's own credential", tr.Name(), a)
		}
		for _, k := range []string{"x-toolsvc-tenant", "x-toolsvc-subject", "x-correlation-id", "traceparent", "x-toolsvc-user-id"} {
			if len(md.Get(k)) != 1 {
				t.Fatalf("%s: upstream metadata has no %s: %v", tr.Name(), k, md)
			}
		}
		meta := out.Result["metadata"].(map[string]any)
		if meta["tool"] != "create-ticket" || meta["toolVersion"] != "1.0.0" {
			t.Fatalf("%s: metadata = %v", tr.Name(), meta)
		}

		id := ticket["id"].(string)
		out = call(t, tr, c.Full, "get-ticket", map[string]any{"ticketId": id})
		if out.Code != "OK" {
			t.Fatalf("%s get-ticket: %s %v", tr.Name(), out.Code, out.Error)
		}
		hints = out.Result["agentHints"].(map[string]any)
		if hints["confidence"] != 0.0 || hints["sourceQuality"] != "unknown" || !strings.Contains(hints["reasoning"].(string), "gave no hints") {
			t.Fatalf("%s: hints of a tool that gave none = %v", tr.Name(), hints)
		}
		data := out.Result["data"].(map[string]any)
		data["ticket"].(map[string]any)["id"] = "normalized"
		got = append(got, map[string]any{"data": data, "agentHints": hints})

		out = call(t, tr, c.Full, "create-ticket", map[string]any{"title": "x", "priority": "high"})
		if out.Code != "INVALID_INPUT" || !strings.Contains(fmt.Sprint(out.Error), "title") {
			t.Fatalf("%s: invalid input = %s %v", tr.Name(), out.Code, out.Error)
		}
		out = call(t, tr, c.Full, "get-ticket", map[string]any{"ticketId": "TCK-999999"})
		if out.Code != "NOT_FOUND" || strings.Contains(fmt.Sprint(out.Error), "shard") {
			t.Fatalf("%s: unknown ticket = %s %v (the upstream's text must not leak)", tr.Name(), out.Code, out.Error)
		}
	}
	for i := 1; i < len(got); i++ {
		if !reflect.DeepEqual(normalize(got[0]), normalize(got[i])) {
			t.Fatalf("transports disagree:\n%v\n%v", got[0], got[i])
		}
	}

	// Every call was audited under the tool's name (the auditor writes
	// in the background): two per transport, one allowed, one invalid.
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, _, err := s.Store().ListAudit(context.Background(), store.AuditFilter{Tenant: "acme", Tool: "create-ticket", Limit: store.MaxAuditLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(events) == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create-ticket audit records = %d, want 6", len(events))
		}
		time.Sleep(50 * time.Millisecond)
	}

	h := upstreamHealth(t, s)
	if h["reachable"] != true || len(h["tools_served"].([]any)) != 2 || len(h["tools_refused"].([]any)) != 0 {
		t.Fatalf("healthz upstream = %v", h)
	}
}

// TestUpstreamAuthMatrix runs the auth matrix over the upstream's tools on
// every transport.
func TestUpstreamAuthMatrix(t *testing.T) {
	up := startTickets(t, ticketsOpts{})
	s, c := newUpstreamServer(t, upstreamsFile(t, up.addr, "", ""))
	newTicket := func(t *testing.T) string {
		out := call(t, GRPC{S: s}, c.Full, "create-ticket", map[string]any{"title": "Matrix ticket", "priority": "low"})
		if out.Code != "OK" {
			t.Fatalf("create-ticket: %v", out.Error)
		}
		return out.Result["data"].(map[string]any)["ticket"].(map[string]any)["id"].(string)
	}
	tools := []MatrixTool{
		{Name: "create-ticket", SideEffect: true, Args: func(string) map[string]any {
			return map[string]any{"title": "Matrix ticket", "priority": "low"}
		}},
		{Name: "get-ticket", NeedsMemory: true, Args: func(id string) map[string]any { return map[string]any{"ticketId": id} }},
	}
	RunMatrixTools(t, c, tools, newTicket, transportsOf(s)...)
}

// TestUpstreamFailures: each way an upstream can fail is an error a
// caller can act on, with nothing of the upstream's internals.
func TestUpstreamFailures(t *testing.T) {
	t.Run("slow", func(t *testing.T) {
		up := startTickets(t, ticketsOpts{opts: ticketsrv.Options{Delay: 5 * time.Second}})
		s, c := newUpstreamServer(t, upstreamsFile(t, up.addr, "descriptor_set: "+descriptorSet(t), ""))
		// The contracts came from the descriptor set; the slow calls time
		// out on the upstream's 2s deadline.
		out := call(t, REST{S: s}, c.Full, "get-ticket", map[string]any{"ticketId": "TCK-000001"})
		if out.Code != "TIMEOUT" || out.Error["retryable"] != true {
			t.Fatalf("slow upstream: %s %v", out.Code, out.Error)
		}
	})
	t.Run("killed", func(t *testing.T) {
		up := startTickets(t, ticketsOpts{})
		s, c := newUpstreamServer(t, upstreamsFile(t, up.addr, "", ""))
		up.srv.Stop()
		for _, tr := range transportsOf(s) {
			// A query is retryable; a mutation without an idempotency key
			// is not (it may have taken effect), whatever failed.
			out := call(t, tr, c.Full, "get-ticket", map[string]any{"ticketId": "TCK-000001"})
			if out.Code != "PROVIDER_ERROR" || out.Error["retryable"] != true || strings.Contains(fmt.Sprint(out.Error), "connection refused") {
				t.Fatalf("%s: killed upstream: %s %v", tr.Name(), out.Code, out.Error)
			}
		}
		if h := upstreamHealth(t, s); len(h["tools_served"].([]any)) != 2 {
			t.Fatalf("healthz = %v", h)
		}
		// Built-in tools are untouched.
		if out := call(t, GRPC{S: s}, c.Full, "get-sync-status", map[string]any{}); out.Code != "OK" {
			t.Fatalf("built-in tool after the upstream died: %v", out.Error)
		}
	})
	t.Run("junk", func(t *testing.T) {
		up := startTickets(t, ticketsOpts{junk: true, noReflection: true})
		s, c := newUpstreamServer(t, upstreamsFile(t, up.addr, "descriptor_set: "+descriptorSet(t), ""))
		for _, tr := range transportsOf(s) {
			out := call(t, tr, c.Full, "create-ticket", map[string]any{"title": "Junk please", "priority": "low"})
			details, _ := out.Error["details"].(map[string]any)
			if out.Code != "PROVIDER_ERROR" || out.Error["retryable"] != false || details["reason"] != "malformed_response" {
				t.Fatalf("%s: junk response: %s %v", tr.Name(), out.Code, out.Error)
			}
		}
	})
	t.Run("rule-breaking response", func(t *testing.T) {
		up := startTickets(t, ticketsOpts{opts: ticketsrv.Options{OmitTicket: true}})
		s, c := newUpstreamServer(t, upstreamsFile(t, up.addr, "", ""))
		out := call(t, MCP{S: s}, c.Full, "create-ticket", map[string]any{"title": "No ticket back", "priority": "low"})
		details, _ := out.Error["details"].(map[string]any)
		if out.Code != "PROVIDER_ERROR" || details["reason"] != "malformed_response" || out.Result != nil {
			t.Fatalf("rule-breaking response: %s %v %v", out.Code, out.Error, out.Result)
		}
	})
	t.Run("reflection off", func(t *testing.T) {
		up := startTickets(t, ticketsOpts{noReflection: true})
		s, c := newUpstreamServer(t, upstreamsFile(t, up.addr, "", ""))
		if out := call(t, GRPC{S: s}, c.Full, "create-ticket", map[string]any{"title": "Nobody home", "priority": "low"}); out.Code != "NOT_FOUND" {
			t.Fatalf("tool of an upstream without contracts: %s", out.Code)
		}
		h := upstreamHealth(t, s)
		if h["reachable"] != false || !strings.Contains(h["error"].(string), "reflection") {
			t.Fatalf("healthz = %v", h)
		}
	})
	t.Run("down at start", func(t *testing.T) {
		s, c := newUpstreamServer(t, upstreamsFile(t, freeAddr(t), "", ""))
		if out := call(t, REST{S: s}, c.Full, "get-sync-status", map[string]any{}); out.Code != "OK" {
			t.Fatalf("built-in tools must be served when an upstream is down: %v", out.Error)
		}
		h := upstreamHealth(t, s)
		if h["reachable"] != false || h["error"] == "" || len(h["tools_served"].([]any)) != 0 {
			t.Fatalf("healthz = %v", h)
		}
	})
	t.Run("failing checklist and conflict", func(t *testing.T) {
		up := startTickets(t, ticketsOpts{})
		overlays := `    overlays:
      tickets.v1.TicketService/GetTicket:
        name: get-ticket
        version: 1.0.0
        description: Too short.
        permissions: ["tickets:read"]
        category: query
        response_time: fast
        idempotent: true
        tags: [tickets]
      tickets.v1.TicketService/PurgeTickets:
        name: add-memory
        version: 1.0.0
        title: Purge
        description: Delete every ticket of the service. Use this never; it exists to show that a name two sources claim is refused.
        permissions: ["tickets:write"]
        category: mutation
        response_time: fast
        side_effect: true
        tags: [tickets]
        examples:
          - description: purge
            params_json: "{}"
            expected_result_json: "{}"
`
		s, c := newUpstreamServer(t, upstreamsFile(t, up.addr, "", overlays))
		for _, name := range []string{"get-ticket"} {
			if _, err := s.Registry().Get(name, ""); err == nil {
				t.Fatalf("%s served despite failing the checklist", name)
			}
		}
		if tool, _ := s.Registry().Get("add-memory", ""); tool == nil || tool.Source != "" {
			t.Fatalf("add-memory was overridden by the upstream: %v", tool)
		}
		if out := call(t, GRPC{S: s}, c.Full, "create-ticket", map[string]any{"title": "Still served", "priority": "low"}); out.Code != "OK" {
			t.Fatalf("a passing tool of the same upstream: %v", out.Error)
		}
		refused := fmt.Sprint(upstreamHealth(t, s)["tools_refused"])
		for _, want := range []string{"get-ticket", "tool.contract.string.min_len", "add-memory", "name.unique", "conflict"} {
			if !strings.Contains(refused, want) {
				t.Fatalf("healthz refusals %s do not name %q", refused, want)
			}
		}
	})
}

// descriptorSet writes the example upstream's contracts as `buf build -o`
// would: its file and every import.
func descriptorSet(t *testing.T) string {
	t.Helper()
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		for i := range fd.Imports().Len() {
			add(fd.Imports().Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	files, err := ticketsrv.Files()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := files.FindFileByPath(ticketsv1.File_tickets_v1_tickets_proto.Path())
	if err != nil {
		t.Fatal(err)
	}
	add(fd)
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tickets.binpb")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUpstreamExamplesAreExecutable runs every example of the upstream's
// tools, as TestExamplesAreExecutable does for the in-tree ones, and
// checks each result against the tool's derived output schema: the data
// is the upstream's response without its hints field.
func TestUpstreamExamplesAreExecutable(t *testing.T) {
	up := startTickets(t, ticketsOpts{})
	s := testserver.New(t, testserver.Options{Configure: func(cfg *server.Config) {
		cfg.UpstreamsFile = upstreamsFile(t, up.addr, "", "")
	}})
	tr := GRPC{S: s}
	ran := 0
	for _, tool := range s.Registry().All() {
		if tool.Source == "" {
			continue
		}
		if props, _ := tool.OutputSchema["properties"].(map[string]any); props != nil {
			data, _ := props["data"].(map[string]any)
			if dp, _ := data["properties"].(map[string]any); dp == nil || dp["agentHints"] != nil || dp["ticket"] == nil {
				t.Fatalf("%s: data schema %v: want the response's fields without its hints", tool.Name, data)
			}
		}
		validate := compileSchema(t, tool)
		for i, ex := range tool.Examples {
			t.Run(fmt.Sprintf("%s/%d", tool.Name, i), func(t *testing.T) {
				out := call(t, tr, "", tool.Name, ex.ParamsJSON)
				want := ex.ErrorCode
				if want == "" {
					want = "OK"
				}
				if out.Code != want {
					t.Fatalf("%q: code %s, want %s (%v)", ex.Description, out.Code, want, out.Error)
				}
				got := out.Error
				if want == "OK" {
					got = out.Result["data"].(map[string]any)
					if _, leaked := got["agentHints"]; leaked {
						t.Fatalf("the upstream's hints are in data too: %v", got)
					}
					if err := validate.Validate(roundTrip(t, out.Result)); err != nil {
						t.Fatalf("result does not conform to the output schema: %v", err)
					}
				}
				if path, ok := subset(ex.Expected, got, ""); !ok {
					t.Fatalf("%q: expected %s to match\nwant %v\ngot  %v", ex.Description, path, ex.Expected, got)
				}
			})
			ran++
		}
	}
	if ran != 2 {
		t.Fatalf("ran %d upstream examples, want 2", ran)
	}
}
