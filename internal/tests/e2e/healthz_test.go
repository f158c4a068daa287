package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// operatorAuth writes an auth file of one tenant with a key per grant
// (grant → key), for the operator routes' tests.
func operatorAuth(t *testing.T, grants ...string) (authFile, tenant string, keys map[string]string) {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	tenant = "t" + hex.EncodeToString(b[:])
	keys = map[string]string{}
	var body strings.Builder
	body.WriteString("api_keys:\n")
	for i, g := range grants {
		key := fmt.Sprintf("tsk_%s_op%d", hex.EncodeToString(b[:]), i)
		keys[g] = key
		fmt.Fprintf(&body, "  - key_sha256: %q\n    subject: %q\n    tenant: %s\n    permissions: [%q]\n", auth.HashKey(key), "op-"+g, tenant, g)
	}
	authFile = filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(authFile, []byte(body.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return authFile, tenant, keys
}

// get sends GET url with the key (none when empty) and returns the status
// and body.
func getWithKey(t *testing.T, u, key string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestHealthzObservabilitySummary: the operator view of /healthz reports
// total requests, total errors, calls in flight and the most called
// endpoints (docs/OPERATIONS.md), counted over every transport.
func TestHealthzObservabilitySummary(t *testing.T) {
	authFile, key := uniqueTenantKey(t)
	s := testserver.New(t, testserver.Options{Configure: func(c *server.Config) { c.AuthFile = authFile }})
	ctx := t.Context()
	for _, tr := range []Transport{GRPC{S: s}, REST{S: s}, MCP{S: s}} {
		if o, err := tr.Call(ctx, key, "get-sync-status", map[string]any{}, nil); err != nil || o.Code != "OK" {
			t.Fatalf("%s get-sync-status = %s, %v", tr.Name(), o.Code, err)
		}
	}
	if o, err := (REST{S: s}).Call(ctx, key, "add-memory", map[string]any{"content": ""}, nil); err != nil || o.Code != "INVALID_INPUT" {
		t.Fatalf("add-memory = %s, %v", o.Code, err)
	}
	status, b := getWithKey(t, s.HTTP+"/healthz?view=operator", key)
	if status != http.StatusOK {
		t.Fatalf("operator view = %d %s", status, b)
	}
	var body struct {
		Observability struct {
			TotalRequests uint64 `json:"total_requests"`
			TotalErrors   uint64 `json:"total_errors"`
			InFlight      *int64 `json:"in_flight"`
			TopEndpoints  []struct {
				Endpoint         string
				Requests, Errors uint64
			} `json:"top_endpoints"`
		} `json:"observability"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatal(err)
	}
	o := body.Observability
	if o.TotalRequests < 4 || o.TotalErrors < 1 || o.InFlight == nil || len(o.TopEndpoints) == 0 {
		t.Fatalf("observability = %+v, want at least 4 requests, 1 error, in_flight and top endpoints", o)
	}
	top := o.TopEndpoints[0]
	if top.Endpoint != "get-sync-status" || top.Requests != 3 || top.Errors != 0 {
		t.Errorf("top endpoint = %+v, want get-sync-status with 3 requests", top)
	}
}

// TestHealthViews: an anonymous /healthz answers {"status":"ok"} and
// nothing else; the operator view and /metrics need a credential holding
// health:read and metrics:read respectively (401 without one, 403 with
// another grant), each refusal and each operator view is audited, and an
// auth file granting them is not warned about. In development mode the
// anonymous caller reads both.
func TestHealthViews(t *testing.T) {
	authFile, tenant, keys := operatorAuth(t, server.PermissionHealthRead, server.PermissionMetricsRead, "memory:read", "health:*")
	var logs testenv.Buffer
	s := testserver.New(t, testserver.Options{
		Logger:    slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Configure: func(c *server.Config) { c.AuthFile = authFile },
	})
	if strings.Contains(logs.String(), "can never match") {
		t.Errorf("start-up warns about an operator permission:\n%s", logs.String())
	}

	status, b := getWithKey(t, s.HTTP+"/healthz", "")
	var anon map[string]any
	if status != http.StatusOK || json.Unmarshal(b, &anon) != nil || len(anon) != 1 || anon["status"] != "ok" {
		t.Errorf("anonymous /healthz = %d %s, want 200 {\"status\":\"ok\"} only", status, b)
	}
	status, b = getWithKey(t, s.HTTP+"/healthz", keys[server.PermissionHealthRead])
	if status != http.StatusOK || strings.Contains(string(b), "observability") {
		t.Errorf("/healthz with a key but no view = %d %s, want the probe's answer", status, b)
	}
	if status, b := getWithKey(t, s.HTTP+"/healthz?view=everything", ""); status != http.StatusBadRequest {
		t.Errorf("/healthz?view=everything = %d %s, want 400", status, b)
	}

	for _, tc := range []struct {
		path, key string
		want      int
	}{
		{"/healthz?view=operator", "", http.StatusUnauthorized},
		{"/healthz?view=operator", "tsk_unknown_key_0123456789", http.StatusUnauthorized},
		{"/healthz?view=operator", keys["memory:read"], http.StatusForbidden},
		{"/healthz?view=operator", keys[server.PermissionMetricsRead], http.StatusForbidden},
		{"/healthz?view=operator", keys[server.PermissionHealthRead], http.StatusOK},
		{"/healthz?view=operator", keys["health:*"], http.StatusOK},
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", keys[server.PermissionHealthRead], http.StatusForbidden},
		{"/metrics", keys[server.PermissionMetricsRead], http.StatusOK},
	} {
		status, b := getWithKey(t, s.HTTP+tc.path, tc.key)
		if status != tc.want {
			t.Errorf("GET %s with key %q = %d %.300s, want %d", tc.path, tc.key, status, b, tc.want)
			continue
		}
		switch {
		case status == http.StatusOK && tc.path == "/metrics":
			if !strings.Contains(string(b), "toolsvc_registry_tools") {
				t.Errorf("/metrics = %.300s, want the registry gauge", b)
			}
		case status == http.StatusOK:
			var h map[string]any
			if json.Unmarshal(b, &h) != nil || h["observability"] == nil || h["version"] == nil || h["audit"] == nil {
				t.Errorf("operator view = %.300s, want version, observability and audit", b)
			}
		default:
			var te struct{ Code, Message string }
			if json.Unmarshal(b, &te) != nil || te.Code == "" || !strings.Contains(te.Message, ":read") {
				t.Errorf("refusal of %s = %.300s, want a ToolError naming the permission", tc.path, b)
			}
		}
	}

	// Every decision about a principal on the operator view, and every
	// refused scrape, is in the audit trail.
	want := map[string]int{"GET /healthz?view=operator allow": 2, "GET /healthz?view=operator deny": 2, "GET /metrics deny": 1}
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, _, err := s.Store().(store.AuditStore).ListAudit(t.Context(), store.AuditFilter{Tenant: tenant, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, e := range events {
			got[e.Tool+" "+e.Decision]++
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit records = %v, want %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}

	dev := testserver.New(t, testserver.Options{})
	for _, path := range []string{"/healthz?view=operator", "/metrics"} {
		if status, b := getWithKey(t, dev.HTTP+path, ""); status != http.StatusOK {
			t.Errorf("development mode: GET %s = %d %.200s, want 200", path, status, b)
		}
	}
}

// TestProbesPassTheHostGuard: on a loopback listener the probe routes
// answer whatever Host the probe brings: none at all (a raw HTTP/1.0
// request), an address, a foreign name; HAProxy's default check (OPTIONS /
// over HTTP/1.0) passes too. The operator view keeps the guard.
func TestProbesPassTheHostGuard(t *testing.T) {
	t.Parallel()
	s := testserver.New(t, testserver.Options{})
	u, _ := url.Parse(s.HTTP)
	for _, req := range []string{
		"GET /healthz HTTP/1.0\r\n\r\n",
		"GET /readyz HTTP/1.0\r\n\r\n",
		"GET /api/mcp/health HTTP/1.0\r\n\r\n",
		"OPTIONS / HTTP/1.0\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost: 10.0.3.7:8080\r\nConnection: close\r\n\r\n",
		"GET /readyz HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
	} {
		status, body := rawHTTP(t, u.Host, req)
		if status/100 != 2 {
			t.Errorf("%q = %d %s, want 2xx", req, status, body)
		}
	}
	for _, req := range []string{
		"GET /healthz?view=operator HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
		"POST /healthz HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
	} {
		if status, body := rawHTTP(t, u.Host, req); status != http.StatusForbidden || !strings.Contains(string(body), "DNS rebinding") {
			t.Errorf("%q = %d %s, want 403 from the guard", req, status, body)
		}
	}
}

// rawHTTP writes req on a new connection to addr and reads the response.
func rawHTTP(t *testing.T, addr, req string) (int, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", req, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
