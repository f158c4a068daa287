package wire_test

import (
	"net/http"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

func TestCredentialHeadersCannotBeAllowed(t *testing.T) {
	t.Cleanup(func() { _ = wire.AllowMetadataHeaders(nil) })
	for _, h := range []string{"Authorization", "cookie", "x-api-key", "Proxy-Authorization", "x-auth-token", "X-Client-Secret"} {
		if err := wire.AllowMetadataHeaders([]string{"x-tenant-region", h}); err == nil {
			t.Errorf("allowing %q: want an error", h)
		}
		if wire.MetadataHeaderAllowed(h) {
			t.Errorf("%q is forwarded", h)
		}
	}
	if err := wire.AllowMetadataHeaders([]string{"X-Tenant-Region"}); err != nil {
		t.Fatal(err)
	}
	if !wire.MetadataHeaderAllowed("x-tenant-region") {
		t.Error("an allowed header is not forwarded")
	}
}

// TestHeadersToMetadata: the one mapping of HTTP headers to call metadata
// (REST and MCP) keeps the allowlist, the user agent and the operator's
// headers, and drops everything else and any value gRPC metadata cannot
// carry.
func TestHeadersToMetadata(t *testing.T) {
	if err := wire.AllowMetadataHeaders([]string{"x-region"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wire.AllowMetadataHeaders(nil) })
	h := http.Header{}
	h.Set("Authorization", "Bearer k")
	h.Set("Idempotency-Key", "bad\x01value") // allowlisted, but no valid metadata
	h.Set("User-Agent", "curl/8")
	h.Set("X-Region", "eu")
	h.Set("Cookie", "sid=1")
	h.Set("X-Forwarded-For", "10.0.0.1")
	md := wire.HeadersToMetadata(h)
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
