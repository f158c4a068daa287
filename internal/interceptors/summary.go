package interceptors

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

// summary keeps the figures of Summary. Endpoints are tool names and RPC
// method names, both fixed sets, so the map is bounded.
type summary struct {
	requests, errors atomic.Uint64
	inFlight         atomic.Int64
	endpoints        sync.Map // string -> *endpointCounts
}

type endpointCounts struct{ requests, errors atomic.Uint64 }

func (s *summary) start() { s.inFlight.Add(1) }

func (s *summary) end(endpoint string, failed bool) {
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

// Summary returns the chain's observability summary.
func (m *Metrics) Summary() Summary {
	s := &m.summary
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
