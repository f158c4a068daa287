package e2e

import (
	"context"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestRateLimitCeilingZeroDisables: the per-principal ceiling is served as
// configured, and a ceiling of 0 means no ceiling (it once became the
// default 6,000, silently).
func TestRateLimitCeilingZeroDisables(t *testing.T) {
	t.Parallel()
	const calls = 12
	for _, tc := range []struct {
		ceiling, wantOK int
	}{{5, 5}, {0, calls}} {
		srv := testserver.New(t, testserver.Options{Configure: func(c *server.Config) { c.RateLimitCeiling = tc.ceiling }})
		if got := srv.Config.RateLimitCeiling; got != tc.ceiling {
			t.Fatalf("completed config has ceiling %d, want %d", got, tc.ceiling)
		}
		ok, limited := 0, 0
		for range calls {
			out, err := (REST{S: srv}).Call(context.Background(), "", "get-sync-status", map[string]any{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			switch out.Code {
			case "OK":
				ok++
			case "RATE_LIMITED":
				limited++
			default:
				t.Fatalf("ceiling %d: unexpected %s %v", tc.ceiling, out.Code, out.Error)
			}
		}
		if ok != tc.wantOK || ok+limited != calls {
			t.Errorf("ceiling %d: %d calls answered, %d rate limited; want %d answered", tc.ceiling, ok, limited, tc.wantOK)
		}
	}
}
