package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// The user agent and the headers an operator allowed reach the chain (for
// the ToolContext's metadata); credentials other than Authorization never do.
func TestMetadataHeadersReachTheChain(t *testing.T) {
	allowed, err := wire.NewMetadataHeaders([]string{"x-tenant-region"})
	if err != nil {
		t.Fatal(err)
	}
	conn := &fakeConn{}
	g := newTestGateway(t, conn, Config{MetadataHeaders: allowed})
	for path, body := range map[string]string{"/v1/knowledge:query": `{}`, "/api/mcp/tool/call": `{"toolName":"query-knowledge"}`} {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("User-Agent", "probe/1.2")
		r.Header.Set("X-Tenant-Region", "eu-west")
		r.Header.Set("Cookie", "session=secret")
		r.Header.Set("X-Api-Key", "secret")
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: status = %d: %s", path, w.Code, w.Body)
		}
		conn.mu.Lock()
		md := conn.md
		conn.mu.Unlock()
		if got := md.Get(wire.HeaderClientUserAgent); len(got) != 1 || got[0] != "probe/1.2" {
			t.Errorf("%s: user agent = %v", path, got)
		}
		if got := md.Get("x-tenant-region"); len(got) != 1 || got[0] != "eu-west" {
			t.Errorf("%s: x-tenant-region = %v", path, got)
		}
		for _, k := range []string{"cookie", "x-api-key"} {
			if len(md.Get(k)) != 0 {
				t.Errorf("%s: %s reached the chain", path, k)
			}
		}
	}
}
