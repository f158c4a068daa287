// Package callstats keeps the figures of served calls that operators read
// without a Prometheus query: the totals and top endpoints of /healthz
// (Counts) and the latency quantiles of each interval of the periodic
// pressure line (Window). The interceptor chain records into them.
package callstats

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Summary is the observability summary of /healthz (docs/OPERATIONS.md, `/healthz` and `/readyz`): what the
// chain served since the process started, without a Prometheus query.
type Summary struct {
	// TotalRequests counts every call that entered the chain (health
	// checks aside).
	TotalRequests uint64 `json:"total_requests"`
	// TotalErrors counts the calls that ended with an error.
	TotalErrors uint64 `json:"total_errors"`
	// InFlight is the number of calls being served now.
	InFlight int64 `json:"in_flight"`
	// TopEndpoints are the most called tools (or RPC methods, for calls
	// that reached no tool), most called first.
	TopEndpoints []EndpointCount `json:"top_endpoints"`
}

// EndpointCount is the number of calls of one endpoint.
type EndpointCount struct {
	Endpoint string `json:"endpoint"`
	Requests uint64 `json:"requests"`
	Errors   uint64 `json:"errors"`
}

// TopEndpoints is how many endpoints Summary lists.
const TopEndpoints = 5

// Counts keeps the figures of Summary; the zero value is ready. Endpoints
// are tool names and RPC method names, both fixed sets, so the map is
// bounded.
type Counts struct {
	requests, errors atomic.Uint64
	inFlight         atomic.Int64
	endpoints        sync.Map // string -> *endpointCounts
}

type endpointCounts struct{ requests, errors atomic.Uint64 }

// Start counts a call that began.
func (s *Counts) Start() { s.inFlight.Add(1) }

// End counts the end of a call Start counted, of endpoint, failed or not.
func (s *Counts) End(endpoint string, failed bool) {
	s.inFlight.Add(-1)
	s.requests.Add(1)
	v, ok := s.endpoints.Load(endpoint)
	if !ok {
		v, _ = s.endpoints.LoadOrStore(endpoint, &endpointCounts{})
	}
	e := v.(*endpointCounts)
	e.requests.Add(1)
	if failed {
		s.errors.Add(1)
		e.errors.Add(1)
	}
}

// Summary returns the figures counted so far.
func (s *Counts) Summary() Summary {
	out := Summary{TotalRequests: s.requests.Load(), TotalErrors: s.errors.Load(), InFlight: s.inFlight.Load(),
		TopEndpoints: []EndpointCount{}}
	s.endpoints.Range(func(k, v any) bool {
		e := v.(*endpointCounts)
		out.TopEndpoints = append(out.TopEndpoints, EndpointCount{Endpoint: k.(string), Requests: e.requests.Load(), Errors: e.errors.Load()})
		return true
	})
	sort.Slice(out.TopEndpoints, func(i, j int) bool {
		a, b := out.TopEndpoints[i], out.TopEndpoints[j]
		return a.Requests > b.Requests || a.Requests == b.Requests && a.Endpoint < b.Endpoint
	})
	if len(out.TopEndpoints) > TopEndpoints {
		out.TopEndpoints = out.TopEndpoints[:TopEndpoints]
	}
	return out
}
