package server

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

// PermissionUpstreamsApprove approves a held change of an upstream tool's
// definition (docs/MCP.md, "Pinned definitions").
const PermissionUpstreamsApprove = "upstreams:approve"

// defaultApprovalsInterval is Config.UpstreamApprovalsInterval's default.
const defaultApprovalsInterval = 10 * time.Second

// approvalsEvery is how often approved definitions made on other replicas
// are read (Config.UpstreamApprovalsInterval, default 10 s).
func (s *Server) approvalsEvery() time.Duration {
	if every := s.cfg.UpstreamApprovalsInterval; every > 0 {
		return every
	}
	return defaultApprovalsInterval
}

// serveApproveDefinition is POST /upstreams/{upstream}/approve with
// {"tool": ..., "fingerprint": "sha256:..."}: the operator approves the
// definition a server offers for a held tool, as the operator view lists
// it. The route's decision is audited as every operator route's, and the
// approval itself with the operator's name.
func (s *Server) serveApproveDefinition(w http.ResponseWriter, r *http.Request) {
	p := s.operator(w, r, PermissionUpstreamsApprove, "POST /upstreams/{upstream}/approve", true)
	if p == nil {
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeToolError(w, toolerr.Invalid("content-type", "in", "Content-Type %q: want application/json", r.Header.Get("Content-Type")))
		return
	}
	var body struct {
		Tool        string `json:"tool"`
		Fingerprint string `json:"fingerprint"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		writeToolError(w, toolerr.Invalid("(body)", "json", "the body must be {\"tool\": ..., \"fingerprint\": \"sha256:...\"}: %v", err))
		return
	}
	switch {
	case body.Tool == "":
		writeToolError(w, toolerr.Invalid("tool", "required", "tool is required: the tool's name, as the operator view's definitions_held lists it"))
		return
	case body.Fingerprint == "":
		writeToolError(w, toolerr.Invalid("fingerprint", "required", "fingerprint is required: the offered fingerprint the operator view lists"))
		return
	}
	ups := s.upstreams.Load()
	if ups == nil {
		writeToolError(w, toolerr.New(toolerr.NotFound, "no upstreams file is served"))
		return
	}
	if err := ups.Approve(r.Context(), r.PathValue("upstream"), body.Tool, body.Fingerprint, p.Subject, p.Tenant); err != nil {
		var te *toolerr.Error
		if !errors.As(err, &te) {
			te = toolerr.Classify(err)
		}
		writeToolError(w, te)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approved": body.Fingerprint, "tool": body.Tool, "upstream": r.PathValue("upstream")})
}

// bulkheadCollector exports every upstream's bulkhead (docs/RELIABILITY.md,
// "Upstream bulkheads").
type bulkheadCollector struct{ s *Server }

var (
	bulkInFlight = prometheus.NewDesc("toolsvc_upstream_in_flight", "Calls in flight to an upstream.", []string{"upstream"}, nil)
	bulkMax      = prometheus.NewDesc("toolsvc_upstream_max_in_flight", "The bound on calls in flight to an upstream.", []string{"upstream"}, nil)
	bulkCircuit  = prometheus.NewDesc("toolsvc_upstream_circuit_open", "1 while an upstream's circuit is open, 0.5 half-open, 0 closed.", []string{"upstream"}, nil)
	bulkRejected = prometheus.NewDesc("toolsvc_upstream_rejected_total", "Calls refused at once: by the bound on calls in flight (reason bound) or by the open circuit (reason circuit).", []string{"upstream", "reason"}, nil)
	bulkOpened   = prometheus.NewDesc("toolsvc_upstream_circuit_opened_total", "Times an upstream's circuit opened.", []string{"upstream"}, nil)
	mcpRevision  = prometheus.NewDesc("toolsvc_upstream_mcp_revision", "1 for the MCP revision toolsvc speaks to an upstream MCP server (2026-07-28 or 2025-11-25; absent until it answered).", []string{"upstream", "revision"}, nil)
)

func (c bulkheadCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{bulkInFlight, bulkMax, bulkCircuit, bulkRejected, bulkOpened, mcpRevision} {
		ch <- d
	}
}

func (c bulkheadCollector) Collect(ch chan<- prometheus.Metric) {
	ups := c.s.upstreams.Load()
	if ups == nil {
		return
	}
	for name, b := range ups.Bulkheads() {
		open := 0.0
		switch b.Circuit {
		case upstream.CircuitOpen:
			open = 1
		case upstream.CircuitHalfOpen:
			open = 0.5
		}
		ch <- prometheus.MustNewConstMetric(bulkInFlight, prometheus.GaugeValue, float64(b.InFlight), name)
		ch <- prometheus.MustNewConstMetric(bulkMax, prometheus.GaugeValue, float64(b.MaxInFlight), name)
		ch <- prometheus.MustNewConstMetric(bulkCircuit, prometheus.GaugeValue, open, name)
		ch <- prometheus.MustNewConstMetric(bulkRejected, prometheus.CounterValue, float64(b.Rejected), name, "bound")
		ch <- prometheus.MustNewConstMetric(bulkRejected, prometheus.CounterValue, float64(b.ShortCircuited), name, "circuit")
		ch <- prometheus.MustNewConstMetric(bulkOpened, prometheus.CounterValue, float64(b.Opened), name)
	}
	for name, rev := range ups.Revisions() {
		ch <- prometheus.MustNewConstMetric(mcpRevision, prometheus.GaugeValue, 1, name, rev)
	}
}
