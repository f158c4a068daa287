package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// API keys of the auth file writeAuthFile writes.
const (
	keyFull     = "tsk_test_full_0123456789abcdef"
	keyReadOnly = "tsk_test_readonly_0123456789ab"
	keyMemory   = "tsk_test_memory_0123456789abcd"
)

// writeAuthFile writes an auth file with three API keys: keyFull (every
// permission), keyReadOnly (every permission, read-only) and keyMemory
// (memory tools only).
func writeAuthFile(tb testing.TB) string {
	tb.Helper()
	entry := func(key, subject, perms string, readOnly bool) string {
		return fmt.Sprintf("  - key_sha256: %q\n    subject: %s\n    tenant: acme\n    permissions: %s\n    read_only: %t\n    identifiers: {user_id: u-%s}\n",
			auth.HashKey(key), subject, perms, readOnly, subject)
	}
	file := "api_keys:\n" +
		entry(keyFull, "full", `["*"]`, false) +
		entry(keyReadOnly, "reader", `["*"]`, true) +
		entry(keyMemory, "memo", `["memory:*"]`, false)
	return authtest.WriteFile(tb, "auth.yaml", []byte(file))
}

// newServer starts a test server with configure applied to its config.
func newServer(tb testing.TB, configure func(*server.Config)) *testserver.Server {
	tb.Helper()
	return testserver.New(tb, testserver.Options{Configure: configure})
}

// withAuth configures the auth file of writeAuthFile.
func withAuth(tb testing.TB) func(*server.Config) {
	tb.Helper()
	path := writeAuthFile(tb)
	return func(c *server.Config) { c.AuthFile = path }
}

// response is an HTTP response with its body read.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// request describes one HTTP request.
type request struct {
	Method, URL string
	Body        string
	// ContentType defaults to application/json when Body is not empty;
	// "-" sends none.
	ContentType string
	Header      map[string]string
}

var client = &http.Client{Timeout: 30 * time.Second}

// do sends req and reads the response.
func do(tb testing.TB, req request) response {
	tb.Helper()
	var body io.Reader
	if req.Body != "" {
		body = strings.NewReader(req.Body)
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	r, err := http.NewRequest(method, req.URL, body)
	if err != nil {
		tb.Fatalf("new request: %v", err)
	}
	switch {
	case req.ContentType == "-":
	case req.ContentType != "":
		r.Header.Set("Content-Type", req.ContentType)
	case req.Body != "":
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.Header {
		r.Header.Set(k, v)
	}
	resp, err := client.Do(r)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read body: %v", err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// bearer is an Authorization header map.
func bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// JSON decodes the body as a JSON object.
func (r response) JSON(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		tb.Fatalf("status %d: body is not a JSON object: %v\n%s", r.Status, err, r.Body)
	}
	return m
}

// toolError is the error body.
type toolError struct {
	Code              string         `json:"code"`
	Message           string         `json:"message"`
	Details           map[string]any `json:"details"`
	Retryable         bool           `json:"retryable"`
	Kind              string         `json:"kind"`
	RetryAfterSeconds float64        `json:"retryAfterSeconds"`
	TraceID           string         `json:"traceId"`
	FieldViolations   []struct {
		Field, Rule, Message string
	} `json:"fieldViolations"`
}

// errorBody decodes {"error": ToolError}, failing unless the body has
// exactly that shape with every member present.
func (r response) errorBody(tb testing.TB) toolError {
	tb.Helper()
	// The body is the REST error envelope (docs/REST.md, Errors) with the whole ToolError under error.
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &outer); err != nil || outer["error"] == nil {
		tb.Fatalf("status %d: want {\"error\": {...}}, got %s", r.Status, r.Body)
	}
	for _, k := range []string{"success", "errorCode", "message", "details", "retryable", "error"} {
		if _, ok := outer[k]; !ok || len(outer) != 6 {
			tb.Errorf("error body lacks %q of the REST error envelope, or has more: %s", k, r.Body)
		}
	}
	var inner map[string]json.RawMessage
	if err := json.Unmarshal(outer["error"], &inner); err != nil {
		tb.Fatalf("status %d: error is not an object: %s", r.Status, r.Body)
	}
	for _, k := range []string{"code", "message", "details", "retryable", "kind", "fieldViolations", "retryAfterSeconds", "traceId",
		"agentHints", "metadata", "success", "errorCode"} {
		if _, ok := inner[k]; !ok {
			tb.Errorf("error body lacks %q: %s", k, r.Body)
		}
	}
	if string(outer["success"]) != "false" || string(outer["errorCode"]) != string(inner["code"]) ||
		string(outer["retryable"]) != string(inner["retryable"]) || string(outer["message"]) != string(inner["message"]) {
		tb.Errorf("the REST error envelope disagrees with the ToolError: %s", r.Body)
	}
	var wrapper struct{ Error toolError }
	if err := json.Unmarshal(r.Body, &wrapper); err != nil {
		tb.Fatalf("decode error body: %v", err)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		tb.Errorf("error Content-Type = %q, want application/json", ct)
	}
	return wrapper.Error
}

// waitAudit waits until the audit trail of the development tenant holds at
// least n events (of tool, when not empty): the auditor writes in the
// background.
func waitAudit(tb testing.TB, ts *testserver.Server, tool string, n int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, _, err := ts.Store().ListAudit(context.Background(), store.AuditFilter{Tenant: "default", Tool: tool, Limit: 100})
		if err != nil {
			tb.Fatalf("list audit: %v", err)
		}
		if len(events) >= n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d audit events of %q after 10s, want %d", len(events), tool, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
