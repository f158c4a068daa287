package mcpbridge_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestSameIDsAcrossClients has many clients of two tenants send the same
// JSON-RPC ids at the same moment (the TypeScript SDK's CVE-2026-25536:
// responses routed by id alone crossed between clients), on 2025-era
// sessions, on a stateless server and in the 2026-07-28 era. Every
// request carries its own correlation id, which the chain writes into the
// result's metadata: each client must get, for each id, the answer to its
// own request and no one else's.
func TestSameIDsAcrossClients(t *testing.T) {
	t.Parallel()
	creds := testserver.WriteCredentials(t)
	withAuth := func(stateless bool) *testserver.Server {
		return testserver.New(t, testserver.Options{Configure: func(c *server.Config) {
			c.AuthFile = creds.AuthFile
			c.MCP.Stateless = stateless
		}})
	}
	stateful, stateless := withAuth(false), withAuth(true)
	// 48 calls at once: under the chain's in-flight bound (64), so that
	// shedding is rare (and retried: the answer must still be the own).
	const clients, ids = 8, 6
	for _, mode := range []struct {
		name   string
		srv    *testserver.Server
		modern bool
	}{
		{"2025 sessions", stateful, false},
		{"2025 stateless", stateless, false},
		{"2026-07-28", stateful, true},
		{"2026-07-28 stateless server", stateless, true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			start := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan string, clients*ids)
			for n := 0; n < clients; n++ {
				key := creds.Full
				if n%2 == 1 {
					key = creds.OtherTenant
				}
				c := newClient(t, mode.srv.HTTP)
				c.header.Set("Authorization", "Bearer "+key)
				if !mode.modern && mode.srv == stateful {
					c.initialize(fmt.Sprintf("client-%d", n))
				}
				for id := 1; id <= ids; id++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						if msg := sameIDCall(c, mode.modern, id, fmt.Sprintf("corr-%s-%d-%d", mode.name[:4], n, id)); msg != "" {
							errs <- fmt.Sprintf("client %d id %d: %s", n, id, msg)
						}
					}()
				}
			}
			close(start)
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		})
	}
}

// sameIDCall calls get-sync-status with JSON-RPC id and correlation id
// corr, and says what is wrong with the answer ("" if it is c's own). A
// retryable refusal (shed or timed out on a loaded machine) is retried;
// one carrying another request's correlation id is a crossed answer.
func sameIDCall(c *client, modern bool, id int, corr string) string {
	for attempt := 0; ; attempt++ {
		msg, retry := sameIDAttempt(c, modern, id, corr)
		if !retry || attempt == 10 {
			return msg
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func sameIDAttempt(c *client, modern bool, id int, corr string) (problem string, retry bool) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}`, id)
	h := http.Header{}
	if modern {
		body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},%s}}`, id, modernMeta)
		h = modernHeaders("tools/call", "get-sync-status")
	}
	h.Set("X-Correlation-Id", corr)
	resp, b := c.post(body, h)
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("HTTP %d %s", resp.StatusCode, b), false
	}
	var r struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			StructuredContent struct {
				Metadata struct {
					CorrelationID string `json:"correlationId"`
				} `json:"metadata"`
				Retryable bool `json:"retryable"`
			} `json:"structuredContent"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Sprintf("%s: %v", b, err), false
	}
	got := r.Result.StructuredContent.Metadata.CorrelationID
	crossed := string(r.ID) != fmt.Sprint(id) || (got != "" && got != corr)
	if !crossed && r.Result.IsError && r.Result.StructuredContent.Retryable {
		return fmt.Sprintf("still refused after retries: %.300s", b), true
	}
	if crossed || r.Result.IsError || got != corr {
		return fmt.Sprintf("answer %.300s is not the answer to %s", b, corr), false
	}
	return "", false
}
