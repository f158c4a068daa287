package gateway_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/rest/gateway"
	"github.com/toolsvc/toolsvc/internal/server"
)

const origin = "https://console.example.com"

func TestCORS(t *testing.T) {
	ts := newServer(t, func(c *server.Config) { c.REST.CORS.AllowedOrigins = []string{origin} })
	preflight := func(o, method, headers string) map[string]string {
		return map[string]string{"Origin": o, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers}
	}
	for _, tc := range []struct {
		name   string
		req    request
		status int
		want   map[string]string // header -> substring ("" means absent)
	}{
		{name: "preflight from an allowed origin", req: request{Method: "OPTIONS", URL: "/v1/tools/search-memories:call",
			Header: preflight(origin, "POST", "authorization, content-type, x-agent-id")}, status: 204,
			want: map[string]string{"Access-Control-Allow-Origin": origin, "Access-Control-Allow-Methods": "POST",
				"Access-Control-Max-Age": "600", "Access-Control-Allow-Credentials": ""}},
		{name: "preflight lists the forwarded headers", req: request{Method: "OPTIONS", URL: "/v1/memories",
			Header: preflight(origin, "POST", "x-correlation-id")}, status: 204,
			want: map[string]string{"Access-Control-Allow-Headers": "authorization, x-agent-id, x-agent-version, x-correlation-id"}},
		{name: "preflight lists traceparent", req: request{Method: "OPTIONS", URL: "/api/mcp/tool/call",
			Header: preflight(origin, "POST", "traceparent")}, status: 204,
			want: map[string]string{"Access-Control-Allow-Headers": "traceparent", "Vary": "Origin"}},
		{name: "preflight from another origin", req: request{Method: "OPTIONS", URL: "/v1/tools",
			Header: preflight("https://evil.example", "GET", "")}, status: 403,
			want: map[string]string{"Access-Control-Allow-Origin": ""}},
		{name: "preflight for a method the API lacks", req: request{Method: "OPTIONS", URL: "/v1/tools",
			Header: preflight(origin, "PUT", "")}, status: 403,
			want: map[string]string{"Access-Control-Allow-Origin": ""}},
		{name: "request from an allowed origin", req: request{URL: "/v1/tools", Header: map[string]string{"Origin": origin}}, status: 200,
			want: map[string]string{"Access-Control-Allow-Origin": origin, "Access-Control-Expose-Headers": "Retry-After", "Vary": "Origin"}},
		{name: "error from an allowed origin is readable", req: request{URL: "/v1/tools/no-such-tool", Header: map[string]string{"Origin": origin}}, status: 404,
			want: map[string]string{"Access-Control-Allow-Origin": origin}},
		{name: "request from another origin", req: request{URL: "/v1/tools", Header: map[string]string{"Origin": "https://evil.example"}}, status: 200,
			want: map[string]string{"Access-Control-Allow-Origin": ""}},
		{name: "OPTIONS that is not a preflight", req: request{Method: "OPTIONS", URL: "/v1/tools", Header: map[string]string{"Origin": origin}}, status: 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.URL = ts.HTTP + tc.req.URL
			resp := do(t, tc.req)
			if resp.Status != tc.status {
				t.Fatalf("status = %d, want %d: %s", resp.Status, tc.status, resp.Body)
			}
			for h, want := range tc.want {
				got := strings.Join(resp.Header.Values(h), ", ")
				if want == "" && got != "" {
					t.Errorf("%s = %q, want none", h, got)
				}
				if want != "" && !strings.Contains(got, want) {
					t.Errorf("%s = %q, want it to contain %q", h, got, want)
				}
			}
		})
	}
}

func TestCORSOffByDefault(t *testing.T) {
	ts := newServer(t, nil)
	resp := do(t, request{URL: ts.HTTP + "/v1/tools", Header: map[string]string{"Origin": origin}})
	if resp.Status != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("status %d, Access-Control-Allow-Origin %q: want 200 without CORS", resp.Status, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	pre := do(t, request{Method: "OPTIONS", URL: ts.HTTP + "/v1/tools", Header: map[string]string{"Origin": origin, "Access-Control-Request-Method": "GET"}})
	if pre.Status != http.StatusMethodNotAllowed || pre.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight: status %d, Access-Control-Allow-Origin %q: want 405 without CORS", pre.Status, pre.Header.Get("Access-Control-Allow-Origin"))
	}
}

func TestCORSWildcardAndCredentials(t *testing.T) {
	t.Run("wildcard", func(t *testing.T) {
		ts := newServer(t, func(c *server.Config) { c.REST.CORS.AllowedOrigins = []string{"*"} })
		resp := do(t, request{URL: ts.HTTP + "/v1/tools", Header: map[string]string{"Origin": "https://any.example"}})
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("Access-Control-Allow-Origin = %q, want *", got)
		}
		if got := resp.Header.Get("Access-Control-Allow-Credentials"); got != "" {
			t.Errorf("Access-Control-Allow-Credentials = %q with a wildcard", got)
		}
	})
	t.Run("credentials with an exact origin", func(t *testing.T) {
		ts := newServer(t, func(c *server.Config) {
			c.REST.CORS.AllowedOrigins, c.REST.CORS.AllowCredentials = []string{origin}, true
		})
		resp := do(t, request{URL: ts.HTTP + "/v1/tools", Header: map[string]string{"Origin": origin}})
		if resp.Header.Get("Access-Control-Allow-Origin") != origin || resp.Header.Get("Access-Control-Allow-Credentials") != "true" {
			t.Errorf("headers = %v", resp.Header)
		}
	})
	t.Run("credentials with the wildcard are refused at configuration", func(t *testing.T) {
		cfg := &server.Config{REST: gateway.Config{CORS: gateway.CORS{AllowedOrigins: []string{"*"}, AllowCredentials: true}}}
		if err := cfg.Complete(); !errors.Is(err, gateway.ErrWildcardCredentials) {
			t.Fatalf("Complete() = %v, want ErrWildcardCredentials", err)
		}
	})
}

func TestCORSValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cors    gateway.CORS
		wantErr bool
	}{
		{name: "none", cors: gateway.CORS{}},
		{name: "exact origins", cors: gateway.CORS{AllowedOrigins: []string{"https://a.example", "http://localhost:3000"}, AllowCredentials: true}},
		{name: "wildcard", cors: gateway.CORS{AllowedOrigins: []string{"*"}}},
		{name: "wildcard with credentials", cors: gateway.CORS{AllowedOrigins: []string{"*"}, AllowCredentials: true}, wantErr: true},
		{name: "path", cors: gateway.CORS{AllowedOrigins: []string{"https://a.example/app"}}, wantErr: true},
		{name: "no scheme", cors: gateway.CORS{AllowedOrigins: []string{"a.example"}}, wantErr: true},
		{name: "other scheme", cors: gateway.CORS{AllowedOrigins: []string{"ftp://a.example"}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cors.Validate(); (err != nil) != tc.wantErr {
				t.Errorf("Validate() = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
