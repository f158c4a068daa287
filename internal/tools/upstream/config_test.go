package upstream

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/base/loopback"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

func TestParseRefusesUnsafeOrIncompleteEntries(t *testing.T) {
	t.Setenv("EMPTY_TOKEN", "")
	cases := []struct {
		name, body, want string
	}{
		{"plaintext beyond loopback", "upstreams:\n  - {name: a, address: 10.0.0.5:9000, tls: {mode: plaintext}, contracts: {reflection: true}}\n", "not a loopback address"},
		{"two contract sources", "upstreams:\n  - {name: a, address: 127.0.0.1:9000, contracts: {reflection: true, descriptor_set: x.binpb}}\n", "not both"},
		{"no contract source", "upstreams:\n  - {name: a, address: 127.0.0.1:9000}\n", "give reflection: true or descriptor_set"},
		{"unknown key", "upstreams:\n  - {name: a, address: 127.0.0.1:9000, contracts: {reflection: true}, token: secret}\n", "field token not found"},
		{"bad name", "upstreams:\n  - {name: Tickets!, address: 127.0.0.1:9000, contracts: {reflection: true}}\n", "name \"Tickets!\""},
		{"duplicate name", "upstreams:\n  - {name: a, address: 127.0.0.1:9000, contracts: {reflection: true}}\n  - {name: a, address: 127.0.0.1:9001, contracts: {reflection: true}}\n", "used twice"},
		{"unset credential", "upstreams:\n  - {name: a, address: 127.0.0.1:9000, contracts: {reflection: true}, credential: {bearer_env: EMPTY_TOKEN}}\n", "EMPTY_TOKEN is not set"},
		{"bad tls mode", "upstreams:\n  - {name: a, address: 127.0.0.1:9000, contracts: {reflection: true}, tls: {mode: none}}\n", "tls.mode \"none\""},
		{"mtls without certificate", "upstreams:\n  - {name: a, address: h:9000, contracts: {reflection: true}, tls: {mode: mtls}}\n", "cert_file"},
		{"overlay key", "upstreams:\n  - {name: a, address: 127.0.0.1:9000, contracts: {reflection: true}, overlays: {GetTicket: {name: get-ticket}}}\n", "want package.Service/Method"},
		{"overlay field", "upstreams:\n  - {name: a, address: 127.0.0.1:9000, contracts: {reflection: true}, overlays: {a.S/M: {tool_name: get-ticket}}}\n", "not a tool definition"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.body), t.TempDir())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestParseAcceptsAndCompletes(t *testing.T) {
	t.Setenv("TICKETS_TOKEN", "s3cret")
	f, err := Parse([]byte(`upstreams:
  - name: tickets
    address: localhost:9191
    tls: {mode: plaintext}
    credential: {bearer_env: TICKETS_TOKEN}
    contracts: {descriptor_set: tickets.binpb}
    overlays:
      tickets.v1.TicketService/PurgeTickets: {name: purge-tickets, version: 1.0.0, side_effect: true}
`), "/etc/toolsvc")
	if err != nil {
		t.Fatal(err)
	}
	u := f.Upstreams[0]
	if u.Timeout != DefaultTimeout || u.token != "s3cret" || u.Contracts.DescriptorSet != "/etc/toolsvc/tickets.binpb" {
		t.Fatalf("completed = %+v", u)
	}
	if o := u.overlays["tickets.v1.TicketService/PurgeTickets"]; o.GetName() != "purge-tickets" || !o.GetSideEffect() {
		t.Fatalf("overlay = %v", o)
	}
}

// TestMapError: every upstream status becomes a code a caller can act on,
// and the upstream's own text never reaches the caller unless it is a
// ToolError written for agents.
func TestMapError(t *testing.T) {
	u := &Upstream{cfg: Config{Name: "tickets"}}
	withToolError, _ := status.New(codes.InvalidArgument, "raw").WithDetails(&toolsvcv1.ToolError{Code: "INVALID_INPUT", Message: "priority must be low or high",
		FieldViolations: []*toolsvcv1.FieldViolation{{Field: "priority", Rule: "string.in", Message: "must be low or high"}}})
	cases := []struct {
		err       error
		code      toolerr.Code
		retryable bool
		message   string
	}{
		{status.Error(codes.Unavailable, "dial tcp 10.1.2.3: connection refused"), toolerr.ProviderError, true, "upstream tickets is unavailable"},
		{status.Error(codes.DeadlineExceeded, "deadline"), toolerr.Timeout, true, "did not answer in time"},
		{status.Error(codes.NotFound, "row 42 missing in table t_tickets"), toolerr.NotFound, false, "found no such resource"},
		{status.Error(codes.InvalidArgument, "pq: syntax error"), toolerr.InvalidInput, false, "rejected the arguments"},
		{status.Error(codes.Unauthenticated, "bad token"), toolerr.ProviderError, false, "refused toolsvc's credential"},
		{status.Error(codes.Unimplemented, "unknown method"), toolerr.ProviderError, false, "does not serve this tool"},
		{status.Error(codes.Internal, "panic: nil map at handler.go:12"), toolerr.ProviderError, true, "upstream tickets failed"},
		{status.Error(codes.ResourceExhausted, "quota"), toolerr.RateLimited, true, "over its capacity"},
		{withToolError.Err(), toolerr.InvalidInput, false, "priority must be low or high"},
		{errors.New("not a status"), toolerr.ProviderError, true, "upstream tickets failed"},
	}
	for _, c := range cases {
		e, ok := toolerr.As(u.mapError(context.Background(), c.err))
		if !ok {
			t.Fatalf("%v: not a ToolError", c.err)
		}
		te := e.ToolError("")
		if e.Code != c.code || te.GetRetryable() != c.retryable || !strings.Contains(e.Message, c.message) {
			t.Errorf("%v: got %s retryable=%v %q, want %s retryable=%v %q", c.err, e.Code, te.GetRetryable(), e.Message, c.code, c.retryable, c.message)
		}
		for _, leak := range []string{"10.1.2.3", "t_tickets", "pq:", "handler.go"} {
			if strings.Contains(e.Message, leak) {
				t.Errorf("%v: message %q leaks %q", c.err, e.Message, leak)
			}
		}
	}
}

// FuzzParse: whatever the file, Parse either refuses it with a reason
// that names the upstreams file, or returns a configuration that keeps
// every rule the rest of the package relies on.
func FuzzParse(f *testing.F) {
	f.Add([]byte("upstreams:\n  - {name: a, address: 127.0.0.1:9000, contracts: {reflection: true}}\n"))
	f.Add([]byte("upstreams:\n  - {name: a, address: '[::1]:1', tls: {mode: plaintext}, contracts: {descriptor_set: x}, overlays: {a.S/M: {name: x-y, examples: [{}]}}}\n"))
	f.Add([]byte("upstreams:\n  - {name: d, mcp: {url: 'http://127.0.0.1:9292/mcp'}, tls: {mode: plaintext}, timeout: 2s}\n"))
	f.Add([]byte("upstreams:\n  - {name: a, address: 10.0.0.1:1, tls: {mode: plaintext}, contracts: {reflection: true}}\n"))
	f.Add([]byte("upstreams: [1, 2]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b, "/cfg")
		if err != nil {
			if file != nil {
				t.Fatalf("Parse returned a file with its error %v", err)
			}
			if !strings.HasPrefix(err.Error(), "upstreams file: ") {
				t.Fatalf("the reason does not name the upstreams file: %v", err)
			}
			return
		}
		names := map[string]bool{}
		for _, u := range file.Upstreams {
			if !nameRE.MatchString(u.Name) || names[u.Name] {
				t.Fatalf("accepted name %q (invalid or used twice)", u.Name)
			}
			names[u.Name] = true
			if u.Timeout <= 0 {
				t.Fatalf("%s: accepted timeout %v", u.Name, u.Timeout)
			}
			switch u.TLS.Mode {
			case "system", "ca", "mtls", "plaintext":
			default:
				t.Fatalf("%s: accepted tls.mode %q", u.Name, u.TLS.Mode)
			}
			for _, p := range []string{u.TLS.CAFile, u.TLS.CertFile, u.TLS.KeyFile, u.Credential.BearerFile, u.Contracts.DescriptorSet} {
				if p != "" && !filepath.IsAbs(p) {
					t.Fatalf("%s: path %q was not made absolute", u.Name, p)
				}
			}
			if u.MCP == nil && u.Contracts.Reflection == (u.Contracts.DescriptorSet != "") {
				t.Fatalf("%s: a gRPC upstream accepted without exactly one contract source", u.Name)
			}
			if u.MCP == nil && u.TLS.Mode == "plaintext" && !u.TLS.AllowNonLoopbackPlaintext {
				if host, _, err := net.SplitHostPort(u.Address); err != nil || !loopback.Host(host) {
					t.Fatalf("%s: plaintext to %q accepted without allow_non_loopback_plaintext", u.Name, u.Address)
				}
			}
			if len(u.overlays) != len(u.Overlays) {
				t.Fatalf("%s: %d overlays given, %d kept", u.Name, len(u.Overlays), len(u.overlays))
			}
		}
	})
}
