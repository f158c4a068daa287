package e2e

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestFailedAuthenticationCountedNotAudited: credentials no one issued,
// over gRPC, REST and MCP, are counted by transport and reason and logged
// at a bounded rate (one line for the whole burst). That they leave no
// audit record is TestFailedAuthenticationIsNotAudited's (internal/
// interceptors: records without a tenant cannot be listed here).
func TestFailedAuthenticationCountedNotAudited(t *testing.T) {
	t.Parallel()
	authFile := parityAuthFile(t)
	logs := &testenv.Buffer{}
	srv := testserver.New(t, testserver.Options{
		Configure: func(c *server.Config) { c.AuthFile = authFile },
		Logger:    slog.New(slog.NewJSONHandler(logs, nil)),
	})
	const n = 10
	for _, tr := range []Transport{GRPC{S: srv}, REST{S: srv}, MCP{S: srv}} {
		for range n {
			o, err := tr.Call(context.Background(), parityBad, "get-sync-status", map[string]any{}, nil)
			if err != nil || o.Code != "UNAUTHORIZED" {
				t.Fatalf("%s with a bad key = %+v %v, want UNAUTHORIZED", tr.Name(), o, err)
			}
		}
	}
	// /metrics needs metrics:read on the main listener: a valid key's.
	req, _ := http.NewRequest(http.MethodGet, srv.HTTP+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+parityFull)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, tr := range []string{"grpc", "rest", "mcp"} {
		want := `toolsvc_auth_failures_total{reason="invalid credentials",transport="` + tr + `"} 10`
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(string(body), "toolsvc_auth_failures_total"))
		}
	}
	if lines := strings.Count(logs.String(), `"msg":"authentication failed"`); lines != 1 {
		t.Errorf("%d log lines for %d failed authentications within the interval, want 1", lines, 3*n)
	}
	if strings.Contains(logs.String(), parityBad) {
		t.Error("a refused credential was logged")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
