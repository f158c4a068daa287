package wire_test

import (
	"net/http"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

func TestCredentialHeadersCannotBeAllowed(t *testing.T) {
	for _, h := range []string{"Authorization", "cookie", "x-api-key", "Proxy-Authorization", "x-auth-token", "X-Client-Secret"} {
		m, err := wire.NewMetadataHeaders([]string{"x-tenant-region", h})
		if err == nil {
			t.Errorf("allowing %q: want an error", h)
		}
		if m.Allowed(h) {
			t.Errorf("%q is forwarded", h)
		}
	}
	if _, err := wire.NewMetadataHeaders([]string{"x-tenant region"}); err == nil {
		t.Error("a name with a space: want an error")
	}
	m, err := wire.NewMetadataHeaders([]string{"X-Tenant-Region", " ", "x-tenant-region"})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Allowed("x-tenant-region") || len(m.Names()) != 1 {
		t.Errorf("allowed = %v: want x-tenant-region once", m.Names())
	}
	var none wire.MetadataHeaders
	if none.Allowed("x-tenant-region") || !none.Allowed(wire.HeaderClientUserAgent) {
		t.Error("the zero value allows an operator's header, or not the user agent")
	}
}

// TestHeadersToMetadata: the one mapping of HTTP headers to call metadata
// (REST and MCP) keeps the allowlist, the user agent and the operator's
// headers, and drops everything else and any value gRPC metadata cannot
// carry.
func TestHeadersToMetadata(t *testing.T) {
	m, err := wire.NewMetadataHeaders([]string{"x-region"})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer k")
	h.Set("Idempotency-Key", "bad\x01value") // allowlisted, but no valid metadata
	h.Set("User-Agent", "curl/8")
	h.Set("X-Region", "eu")
	h.Set("Cookie", "sid=1")
	h.Set("X-Forwarded-For", "10.0.0.1")
	md := m.ToMetadata(h)
	want := map[string]string{"authorization": "Bearer k", wire.HeaderClientUserAgent: "curl/8", "x-region": "eu"}
	for k, v := range want {
		if got := md.Get(k); len(got) != 1 || got[0] != v {
			t.Errorf("%s = %v, want %q", k, got, v)
		}
	}
	if len(md) != len(want) {
		t.Errorf("metadata = %v, want only %v", md, want)
	}
}
