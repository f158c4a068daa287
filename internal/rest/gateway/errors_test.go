package gateway_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/server"
)

// errorCase is one request that must fail with status and code.
type errorCase struct {
	name   string
	req    request
	status int
	code   string
	// field, when set, must be the field of a field violation.
	field string
	// contains, when set, must be in the message.
	contains string
	// header, when set, must be present with a value containing the value.
	header map[string]string
}

func runErrorCases(t *testing.T, base string, cases []errorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.URL = base + tc.req.URL
			resp := do(t, tc.req)
			if resp.Status != tc.status {
				t.Fatalf("status = %d, want %d; body %s", resp.Status, tc.status, resp.Body)
			}
			te := resp.errorBody(t)
			if te.Code != tc.code {
				t.Errorf("code = %q, want %q (%s)", te.Code, tc.code, te.Message)
			}
			if te.TraceID == "" || te.Kind == "" || te.Message == "" {
				t.Errorf("error lacks trace id, kind or message: %s", resp.Body)
			}
			if tc.field != "" {
				found := false
				for _, v := range te.FieldViolations {
					found = found || v.Field == tc.field
				}
				if !found {
					t.Errorf("no field violation for %q: %s", tc.field, resp.Body)
				}
			}
			if tc.contains != "" && !strings.Contains(te.Message, tc.contains) {
				t.Errorf("message %q does not contain %q", te.Message, tc.contains)
			}
			for k, v := range tc.header {
				if got := resp.Header.Get(k); got == "" || !strings.Contains(got, v) {
					t.Errorf("header %s = %q, want it to contain %q", k, got, v)
				}
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	ts := newServer(t, func(c *server.Config) { c.MaxRequestBytes = 1024 })
	big := `{"content":"` + strings.Repeat("a", 2000) + `"}`
	runErrorCases(t, ts.HTTP, []errorCase{
		{name: "malformed JSON", req: request{Method: "POST", URL: "/v1/memories", Body: `{"content":`},
			status: 400, code: "INVALID_INPUT", contains: "malformed JSON"},
		{name: "trailing data after the JSON value", req: request{Method: "POST", URL: "/v1/memories", Body: `{"content":"x"} {}`},
			status: 400, code: "INVALID_INPUT", contains: "malformed JSON"},
		{name: "body not an object", req: request{Method: "POST", URL: "/v1/memories", Body: `["x"]`},
			status: 400, code: "INVALID_INPUT"},
		{name: "unknown field", req: request{Method: "POST", URL: "/v1/memories", Body: `{"content":"x","bogus":1}`},
			status: 400, code: "INVALID_INPUT", field: "bogus", contains: `unknown field "bogus"`},
		{name: "wrong type", req: request{Method: "POST", URL: "/v1/memories", Body: `{"content":5}`},
			status: 400, code: "INVALID_INPUT", field: "content", contains: "content"},
		{name: "wrong type in a list", req: request{Method: "POST", URL: "/v1/memories:search", Body: `{"query":"x","limit":"many"}`},
			status: 400, code: "INVALID_INPUT", field: "limit"},
		{name: "validation with field violations", req: request{Method: "POST", URL: "/v1/memories", Body: `{"content":""}`},
			status: 400, code: "INVALID_INPUT", field: "content"},
		{name: "validation of an enum in a list", req: request{Method: "POST", URL: "/v1/memories:search", Body: `{"query":"x","layers":["nowhere"]}`},
			status: 400, code: "INVALID_INPUT", field: "layers[0]"},
		{name: "generic call with an unknown argument", req: request{Method: "POST", URL: "/v1/tools/add-memory:call", Body: `{"content":"x","bogus":true}`},
			status: 400, code: "INVALID_INPUT", contains: "bogus"},
		{name: "unknown query parameter", req: request{URL: "/v1/knowledge?query=db&bogus=1"},
			status: 400, code: "INVALID_INPUT", field: "bogus"},
		{name: "query parameter of the wrong type", req: request{URL: "/v1/knowledge?limit=many"},
			status: 400, code: "INVALID_INPUT", field: "limit"},
		{name: "query parameter out of range", req: request{URL: "/v1/knowledge?limit=1000"},
			status: 400, code: "INVALID_INPUT", field: "limit"},
		{name: "seed call with input and arguments", req: request{Method: "POST", URL: "/api/mcp/tool/call",
			Body: `{"toolName":"search-memories","input":{"query":"x"},"arguments":{"query":"x"}}`},
			status: 400, code: "INVALID_INPUT", field: "arguments"},
		{name: "seed call with an unknown member", req: request{Method: "POST", URL: "/api/mcp/tool/call", Body: `{"toolName":"search-memories","params":{}}`},
			status: 400, code: "INVALID_INPUT", field: "params"},
		{name: "seed call without toolName", req: request{Method: "POST", URL: "/api/mcp/tool/call", Body: `{"input":{}}`},
			status: 400, code: "INVALID_INPUT", field: "toolName"},
		{name: "seed call with input not an object", req: request{Method: "POST", URL: "/api/mcp/tool/call", Body: `{"toolName":"search-memories","input":[1]}`},
			status: 400, code: "INVALID_INPUT", field: "input"},
		{name: "seed call failing validation", req: request{Method: "POST", URL: "/api/mcp/tool/call", Body: `{"toolName":"search-memories","input":{"query":""}}`},
			status: 400, code: "INVALID_INPUT", field: "query"},
		{name: "unknown route", req: request{URL: "/v1/nothing-here"}, status: 404, code: "NOT_FOUND"},
		{name: "unknown seed route", req: request{URL: "/api/mcp/nothing"}, status: 404, code: "NOT_FOUND"},
		{name: "unknown tool", req: request{URL: "/v1/tools/no-such-tool"}, status: 404, code: "NOT_FOUND"},
		{name: "unknown tool called", req: request{Method: "POST", URL: "/v1/tools/no-such-tool:call", Body: `{}`}, status: 404, code: "NOT_FOUND"},
		{name: "unknown tool called by seed route", req: request{Method: "POST", URL: "/api/mcp/tool/call", Body: `{"toolName":"no-such-tool","input":{}}`},
			status: 404, code: "NOT_FOUND"},
		{name: "unknown memory", req: request{Method: "DELETE", URL: "/v1/memories/mem_00000000000000000000000000000000"}, status: 404, code: "NOT_FOUND"},
		{name: "wrong method", req: request{Method: "PUT", URL: "/v1/memories", Body: `{}`}, status: 405, code: "INVALID_INPUT",
			header: map[string]string{"Allow": "POST"}},
		{name: "wrong method on a path with a parameter", req: request{Method: "POST", URL: "/v1/knowledge/adr-042-database-selection", Body: `{}`},
			status: 405, code: "INVALID_INPUT", header: map[string]string{"Allow": "GET"}},
		{name: "wrong method on a seed route", req: request{Method: "POST", URL: "/api/mcp/health"}, status: 405, code: "INVALID_INPUT",
			header: map[string]string{"Allow": "GET"}},
		{name: "wrong method on the OpenAPI document", req: request{Method: "DELETE", URL: "/openapi.json"}, status: 405, code: "INVALID_INPUT",
			header: map[string]string{"Allow": "GET"}},
		{name: "oversized body", req: request{Method: "POST", URL: "/v1/memories", Body: big}, status: 413, code: "INVALID_INPUT", contains: "1024 bytes"},
		{name: "oversized seed call", req: request{Method: "POST", URL: "/api/mcp/tool/call", Body: big}, status: 413, code: "INVALID_INPUT"},
		{name: "text/plain body", req: request{Method: "POST", URL: "/v1/memories", Body: `{"content":"x"}`, ContentType: "text/plain"},
			status: 415, code: "INVALID_INPUT", contains: "application/json"},
		{name: "body without a media type", req: request{Method: "POST", URL: "/v1/memories", Body: `{"content":"x"}`, ContentType: "-"},
			status: 415, code: "INVALID_INPUT"},
		{name: "JSON in another charset", req: request{Method: "POST", URL: "/v1/memories", Body: `{"content":"x"}`, ContentType: "application/json; charset=latin1"},
			status: 415, code: "INVALID_INPUT"},
		{name: "form body on the seed call", req: request{Method: "POST", URL: "/api/mcp/tool/call", Body: `toolName=x`, ContentType: "application/x-www-form-urlencoded"},
			status: 415, code: "INVALID_INPUT"},
	})
}

func TestOversizedChunkedBody(t *testing.T) {
	ts := newServer(t, func(c *server.Config) { c.MaxRequestBytes = 1024 })
	// A reader of unknown length makes the client send the body chunked:
	// the limit must hold without a Content-Length.
	body := io.MultiReader(strings.NewReader(`{"content":"`), strings.NewReader(strings.Repeat("a", 4096)), strings.NewReader(`"}`))
	r, err := http.NewRequest(http.MethodPost, ts.HTTP+"/v1/memories", body)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status = %d, want 413", resp.StatusCode)
	}
}

func TestAcceptedMediaTypes(t *testing.T) {
	ts := newServer(t, nil)
	for _, tc := range []struct{ name, contentType string }{
		{name: "plain", contentType: "application/json"},
		{name: "utf-8", contentType: "application/json; charset=utf-8"},
		{name: "upper-case charset", contentType: "application/json; charset=UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, request{Method: "POST", URL: ts.HTTP + "/v1/memories:search", Body: `{"query":"anything"}`, ContentType: tc.contentType})
			if resp.Status != http.StatusOK {
				t.Fatalf("status = %d: %s", resp.Status, resp.Body)
			}
		})
	}
}

func TestAuthErrors(t *testing.T) {
	ts := newServer(t, withAuth(t))
	metadataURL := strings.TrimSuffix(ts.Config.PublicURL, "/") + "/.well-known/oauth-protected-resource"
	runErrorCases(t, ts.HTTP, []errorCase{
		{name: "no token", req: request{URL: "/v1/tools"}, status: 401, code: "UNAUTHORIZED",
			header: map[string]string{"WWW-Authenticate": `resource_metadata="` + metadataURL + `"`}},
		{name: "bad token", req: request{URL: "/v1/tools", Header: bearer("tsk_not_a_key")}, status: 401, code: "UNAUTHORIZED",
			header: map[string]string{"WWW-Authenticate": `error="invalid_token"`}},
		{name: "no token on a tool route", req: request{Method: "POST", URL: "/v1/memories:search", Body: `{"query":"x"}`}, status: 401, code: "UNAUTHORIZED",
			header: map[string]string{"WWW-Authenticate": "Bearer"}},
		{name: "no token on the seed tool list", req: request{URL: "/api/mcp/tools"}, status: 401, code: "UNAUTHORIZED",
			header: map[string]string{"WWW-Authenticate": "Bearer"}},
		{name: "no token on the seed call", req: request{Method: "POST", URL: "/api/mcp/tool/call", Body: `{"toolName":"search-memories","input":{"query":"x"}}`},
			status: 401, code: "UNAUTHORIZED", header: map[string]string{"WWW-Authenticate": "Bearer"}},
		{name: "read-only principal on a mutation", req: request{Method: "POST", URL: "/v1/memories", Body: `{"content":"x"}`, Header: bearer(keyReadOnly)},
			status: 403, code: "FORBIDDEN"},
		{name: "read-only principal on a generic mutation", req: request{Method: "POST", URL: "/v1/tools/add-memory:call", Body: `{"content":"x"}`, Header: bearer(keyReadOnly)},
			status: 403, code: "FORBIDDEN"},
		{name: "read-only principal on a seed mutation", req: request{Method: "POST", URL: "/api/mcp/tool/call",
			Body: `{"toolName":"sync-knowledge","input":{}}`, Header: bearer(keyReadOnly)}, status: 403, code: "FORBIDDEN"},
		{name: "invisible tool described", req: request{URL: "/v1/tools/sync-knowledge", Header: bearer(keyMemory)}, status: 404, code: "NOT_FOUND"},
		{name: "invisible tool on its route", req: request{Method: "POST", URL: "/v1/sync", Body: `{}`, Header: bearer(keyMemory)}, status: 404, code: "NOT_FOUND"},
		{name: "invisible tool by seed call", req: request{Method: "POST", URL: "/api/mcp/tool/call", Body: `{"toolName":"sync-knowledge"}`, Header: bearer(keyMemory)},
			status: 404, code: "NOT_FOUND"},
	})

	t.Run("the seed health route needs no token", func(t *testing.T) {
		if resp := do(t, request{URL: ts.HTTP + "/api/mcp/health"}); resp.Status != http.StatusOK {
			t.Fatalf("status = %d: %s", resp.Status, resp.Body)
		}
	})
	t.Run("read-only principal may read", func(t *testing.T) {
		resp := do(t, request{Method: "POST", URL: ts.HTTP + "/v1/memories:search", Body: `{"query":"x"}`, Header: bearer(keyReadOnly)})
		if resp.Status != http.StatusOK {
			t.Fatalf("status = %d: %s", resp.Status, resp.Body)
		}
	})
}

func TestRateLimited(t *testing.T) {
	ts := newServer(t, nil)
	var last response
	// sync-knowledge allows 6 calls a minute.
	for i := range 7 {
		last = do(t, request{Method: "POST", URL: ts.HTTP + "/v1/sync", Body: `{}`})
		if i < 6 && last.Status != http.StatusOK {
			t.Fatalf("call %d: status = %d: %s", i+1, last.Status, last.Body)
		}
	}
	if last.Status != http.StatusTooManyRequests {
		t.Fatalf("7th call: status = %d, want 429: %s", last.Status, last.Body)
	}
	te := last.errorBody(t)
	if te.Code != "RATE_LIMITED" || !te.Retryable || te.RetryAfterSeconds <= 0 {
		t.Errorf("error = %+v, want RATE_LIMITED, retryable, retryAfterSeconds > 0", te)
	}
	ra, err := strconv.Atoi(last.Header.Get("Retry-After"))
	if err != nil || ra < 1 || float64(ra) < te.RetryAfterSeconds || float64(ra) >= te.RetryAfterSeconds+1 {
		t.Errorf("Retry-After = %q, want whole seconds rounding up %v", last.Header.Get("Retry-After"), te.RetryAfterSeconds)
	}
}

// TestTimeout forces TIMEOUT with a 1ns deadline for fast tools: the
// deadline has passed before get-sync-status reads the store. (Not every
// tool notices: search-memories with no content words never reads it.)
func TestTimeout(t *testing.T) {
	ts := newServer(t, func(c *server.Config) {
		c.Chain.Deadlines = interceptors.Deadlines{Fast: time.Nanosecond, Medium: 10 * time.Second, Slow: time.Minute}
	})
	runErrorCases(t, ts.HTTP, []errorCase{
		{name: "typed route", req: request{URL: "/v1/sync/status"}, status: 504, code: "TIMEOUT"},
		{name: "generic route", req: request{Method: "POST", URL: "/v1/tools/get-sync-status:call", Body: `{}`}, status: 504, code: "TIMEOUT"},
		{name: "seed route", req: request{Method: "POST", URL: "/api/mcp/tool/call", Body: `{"toolName":"get-sync-status"}`}, status: 504, code: "TIMEOUT"},
	})
}
