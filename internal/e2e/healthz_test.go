package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/testserver"
)

// TestHealthzObservabilitySummary: /healthz reports total requests, total
// errors, calls in flight and the most called endpoints (seed 004), counted
// over every transport.
func TestHealthzObservabilitySummary(t *testing.T) {
	authFile, key := uniqueTenantKey(t)
	s := testserver.New(t, testserver.Options{Configure: func(c *server.Config) { c.AuthFile = authFile }})
	ctx := t.Context()
	for _, tr := range []Transport{GRPC{S: s}, REST{S: s}, MCP{S: s}} {
		if o, err := tr.Call(ctx, key, "get-sync-status", map[string]any{}, nil); err != nil || o.Code != "OK" {
			t.Fatalf("%s get-sync-status = %s, %v", tr.Name(), o.Code, err)
		}
	}
	if o, err := (REST{S: s}).Call(ctx, key, "add-memory", map[string]any{"content": ""}, nil); err != nil || o.Code != "INVALID_INPUT" {
		t.Fatalf("add-memory = %s, %v", o.Code, err)
	}
	resp, err := http.Get(s.HTTP + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Observability struct {
			TotalRequests uint64 `json:"total_requests"`
			TotalErrors   uint64 `json:"total_errors"`
			InFlight      *int64 `json:"in_flight"`
			TopEndpoints  []struct {
				Endpoint         string
				Requests, Errors uint64
			} `json:"top_endpoints"`
		} `json:"observability"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	o := body.Observability
	if o.TotalRequests < 4 || o.TotalErrors < 1 || o.InFlight == nil || len(o.TopEndpoints) == 0 {
		t.Fatalf("observability = %+v, want at least 4 requests, 1 error, in_flight and top endpoints", o)
	}
	top := o.TopEndpoints[0]
	if top.Endpoint != "get-sync-status" || top.Requests != 3 || top.Errors != 0 {
		t.Errorf("top endpoint = %+v, want get-sync-status with 3 requests", top)
	}
}
