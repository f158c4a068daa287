package mcpbridge

import (
	"net/http"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// The MCP door forwards the client's user agent and the headers an
// operator allowed (for the ToolContext's metadata), never a cookie or an
// API key header.
func TestForwardedCarriesMetadataHeaders(t *testing.T) {
	allowed, err := wire.NewMetadataHeaders([]string{"x-tenant-region"})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("User-Agent", "probe/1.2")
	h.Set("X-Tenant-Region", "eu-west")
	h.Set("Cookie", "sid=secret")
	h.Set("X-Api-Key", "secret")
	h.Set("Authorization", "Bearer k")
	md := allowed.ToMetadata(h)
	if got := md.Get(wire.HeaderClientUserAgent); len(got) != 1 || got[0] != "probe/1.2" {
		t.Errorf("user agent = %v", got)
	}
	if got := md.Get("x-tenant-region"); len(got) != 1 || got[0] != "eu-west" {
		t.Errorf("x-tenant-region = %v", got)
	}
	for _, k := range []string{"cookie", "x-api-key"} {
		if len(md.Get(k)) != 0 {
			t.Errorf("%s forwarded", k)
		}
	}
}
