package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// The pressure line comes every ListStatsInterval with the interval's
// call latencies and the tool list's build figures.
func TestPressureLineReportsTheIntervalsCalls(t *testing.T) {
	var logs testenv.Buffer
	srv := testserver.New(t, testserver.Options{
		Logger:    slog.New(slog.NewJSONHandler(&logs, nil)),
		Configure: func(c *server.Config) { c.ListStatsInterval = 300 * time.Millisecond },
	})
	ctx := context.Background()
	for range 20 {
		if _, err := srv.Tools().ListTools(ctx, &toolsvcv1.ListToolsRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	// The calls may straddle intervals: every line must look right, and
	// together they count all the calls.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		total := 0
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec struct {
				Msg        string
				Calls      int     `json:"calls"`
				P95Ms      float64 `json:"p95_ms"`
				P99Ms      float64 `json:"p99_ms"`
				MaxMs      float64 `json:"max_ms"`
				BuildMaxMs float64 `json:"build_max_ms"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "pressure" || rec.Calls == 0 {
				continue
			}
			if rec.P95Ms <= 0 || rec.P95Ms > rec.P99Ms || rec.P99Ms > rec.MaxMs || rec.BuildMaxMs <= 0 {
				t.Fatalf("pressure line figures look wrong: %s", line)
			}
			total += rec.Calls
		}
		if total >= 20 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no pressure lines with the 20 calls in:\n%s", logs.String())
}
