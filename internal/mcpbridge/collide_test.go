package mcpbridge_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/testserver"
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
			c.MCPStateless = stateless
		}})
	}
	stateful, stateless := withAuth(false), withAuth(true)
	const clients, ids = 12, 8
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
// corr, and says what is wrong with the answer ("" if it is c's own).
func sameIDCall(c *client, modern bool, id int, corr string) string {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}`, id)
	h := http.Header{}
	if modern {
		body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},%s}}`, id, modernMeta)
		h = modernHeaders("tools/call", "get-sync-status")
	}
	h.Set("X-Correlation-Id", corr)
	resp, b := c.post(body, h)
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("HTTP %d %s", resp.StatusCode, b)
	}
	var r struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			StructuredContent struct {
				Metadata struct {
					CorrelationID string `json:"correlationId"`
				} `json:"metadata"`
			} `json:"structuredContent"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Sprintf("%s: %v", b, err)
	}
	if string(r.ID) != fmt.Sprint(id) || r.Result.IsError || r.Result.StructuredContent.Metadata.CorrelationID != corr {
		return fmt.Sprintf("answer %.300s is not the answer to %s", b, corr)
	}
	return ""
}
