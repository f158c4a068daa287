package reliability

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestMetricsListener: with an auth file, /metrics on --http-addr needs a
// credential holding metrics:read, while --metrics-addr serves it without
// one; that listener serves nothing else, and on loopback it refuses a
// Host that names another host (DNS rebinding) but not an address or no
// Host at all.
func TestMetricsListener(t *testing.T) {
	c := testserver.WriteCredentials(t)
	p := newProcConfig(t, "--db", filepath.Join(t.TempDir(), "m.db"), "--auth-file", c.AuthFile).start(t)
	get := func(url, host, key string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if host != "" {
			req.Host = host
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
		return resp.StatusCode, string(b)
	}
	metricsHost := strings.TrimPrefix(p.Metrics, "http://")
	for _, tc := range []struct {
		name, url, host, key string
		want                 int
	}{
		{"main listener, no credential", p.HTTP + "/metrics", "", "", http.StatusUnauthorized},
		{"main listener, a key without metrics:read", p.HTTP + "/metrics", "", c.NoPermission, http.StatusForbidden},
		{"main listener, a key with *", p.HTTP + "/metrics", "", c.Full, http.StatusOK},
		{"metrics listener, no credential", p.Metrics + "/metrics", "", "", http.StatusOK},
		{"metrics listener, as localhost", p.Metrics + "/metrics", "localhost", "", http.StatusOK},
		{"metrics listener, an address as Host", p.Metrics + "/metrics", "10.0.3.7:9464", "", http.StatusOK},
		{"metrics listener, a rebound name", p.Metrics + "/metrics", "evil.example", "", http.StatusForbidden},
		{"metrics listener serves nothing else", p.Metrics + "/healthz", metricsHost, "", http.StatusNotFound},
	} {
		status, body := get(tc.url, tc.host, tc.key)
		if status != tc.want {
			t.Errorf("%s: %d %.200s, want %d", tc.name, status, body, tc.want)
		}
		if status == http.StatusOK && !strings.Contains(body, "toolsvc_registry_tools") {
			t.Errorf("%s: %.200s, want the registry gauge", tc.name, body)
		}
	}
}
