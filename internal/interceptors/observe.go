package interceptors

import (
	"context"
	"log/slog"
	"sync"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/internal/base/callstats"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// Metrics are the chain's Prometheus collectors (docs/CONTRACTS.md: execution count,
// execution time, error rate, cache hit rate), registered on one registry.
type Metrics struct {
	calls    *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight prometheus.Gauge
	panics   prometheus.Counter
	cache    *prometheus.CounterVec
	limited  *prometheus.CounterVec
	// auditUnaudited counts calls with side effects answered without a
	// durable record (--audit-failure=open); the audit writer counts its
	// own failures (internal/store/auditlog).
	auditUnaudited prometheus.Counter
	// window collects the latencies of the periodic pressure line.
	window callstats.Window
	// grpc are go-grpc-middleware's standard grpc_server_* collectors.
	grpc *grpcprom.ServerMetrics
	// summary is /healthz's observability summary.
	summary callstats.Counts
	// series caches the calls and latency children per (tool, transport,
	// code): a vector's WithLabelValues hashes and checks every label and
	// takes the vector's lock on each call.
	series sync.Map // seriesKey → callSeries
}

// seriesKey names the toolsvc_calls_total and toolsvc_call_duration_seconds
// series of a call. Its cardinality is that of the vectors' labels: tools
// of the registry (or the gRPC method when none resolved), transports and
// result codes.
type seriesKey struct{ tool, transport, code string }

// callSeries are the children of a seriesKey.
type callSeries struct {
	calls   prometheus.Counter
	latency prometheus.Observer
}

// callSeries returns the children of the series of a call.
func (m *Metrics) callSeries(tool, transport, code string) callSeries {
	k := seriesKey{tool, transport, code}
	if s, ok := m.series.Load(k); ok {
		return s.(callSeries)
	}
	s, _ := m.series.LoadOrStore(k, callSeries{
		calls:   m.calls.WithLabelValues(tool, transport, code),
		latency: m.latency.WithLabelValues(tool, transport),
	})
	return s.(callSeries)
}

// NewMetrics creates and registers the collectors on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsvc_calls_total", Help: "Tool and service calls by tool, transport and result code.",
		}, []string{"tool", "transport", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "toolsvc_call_duration_seconds", Help: "Call latency by tool and transport.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"tool", "transport"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolsvc_calls_in_flight", Help: "Calls being served now."}),
		panics:   prometheus.NewCounter(prometheus.CounterOpts{Name: "toolsvc_panics_total", Help: "Panics recovered in calls."}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsvc_cache_requests_total", Help: "Result cache lookups of cacheable tools by result (hit or miss).",
		}, []string{"tool", "result"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsvc_rate_limited_total", Help: "Calls refused by a rate limit.",
		}, []string{"tool"}),
		auditUnaudited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolsvc_audit_unaudited_total", Help: "Calls with side effects answered without a durable audit record (--audit-failure=open).",
		}),
		grpc: grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
			grpcprom.WithHistogramBuckets([]float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}))),
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.latency, m.inFlight, m.panics, m.cache, m.limited, m.auditUnaudited, m.grpc)
	}
	return m
}

// Summary returns /healthz's observability summary of the chain's calls.
func (m *Metrics) Summary() callstats.Summary { return m.summary.Summary() }

// TakeWindow returns the calls since the last TakeWindow (latencies and
// errors) and starts a new interval of the pressure line.
func (m *Metrics) TakeWindow() callstats.WindowStats { return m.window.Take() }

// InitializeGRPC sets the grpc_server_* series of every method of s to
// zero, so that dashboards see a method before its first call.
func (m *Metrics) InitializeGRPC(s *grpc.Server) { m.grpc.InitializeMetrics(s) }

// observe logs the start and end of every call, records metrics and opens
// the call's span. It sits right after resolve, so it knows the tool, and
// before auth, so denials are observed too.
func observe(logger *slog.Logger, m *Metrics, tracer trace.Tracer) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := callFrom(ctx)
		name, version := info.FullMethod, ""
		if c.Tool != nil {
			name, version = c.Tool.Name, c.Tool.Version
		}
		var span trace.Span
		if tracer != nil {
			// W3C propagation: the span continues the caller's trace, and
			// its trace id is the one in logs and result metadata.
			md, _ := metadata.FromIncomingContext(ctx)
			ctx = propagation.TraceContext{}.Extract(ctx, mdCarrier(md))
			ctx, span = tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("toolsvc.transport", c.Facts.Transport), attribute.String("toolsvc.tool.version", version),
					attribute.String("toolsvc.correlation_id", c.Facts.CorrelationID)))
			defer span.End()
			if sc := span.SpanContext(); sc.HasTraceID() {
				c.Facts.TraceID = sc.TraceID().String()
			}
		}
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		m.summary.Start()
		failed := true // until the call returns: a panic counts as an error
		defer func() { m.summary.End(name, failed) }()
		base := [...]slog.Attr{
			slog.String("tool", name), slog.String("version", version), slog.String("transport", c.Facts.Transport),
			slog.String("trace_id", c.Facts.TraceID), slog.String("correlation_id", c.Facts.CorrelationID),
		}
		if logger.Enabled(ctx, slog.LevelDebug) {
			logger.LogAttrs(ctx, slog.LevelDebug, "call started", append(base[:], slog.Any("params", redacted{c.Request}))...)
		}
		resp, err := next(ctx, req)
		elapsed := time.Since(c.Facts.Start)
		code := "OK"
		level := slog.LevelInfo
		var cause error
		if err != nil {
			te := toolerr.Classify(err)
			code = string(te.Code)
			cause = te.Unwrap()
			if te.Code == toolerr.Internal || te.Code == toolerr.ProviderError {
				level = slog.LevelError
			} else {
				level = slog.LevelWarn
			}
			if span != nil {
				span.SetStatus(codes.Error, code)
			}
		}
		failed = err != nil
		series := m.callSeries(name, c.Facts.Transport, code)
		series.calls.Inc()
		series.latency.Observe(elapsed.Seconds())
		m.window.Record(elapsed, failed)
		if logger.Enabled(ctx, level) {
			var buf [len(base) + 7]slog.Attr // the line's attributes stay on the stack
			attrs := append(buf[:0], base[:]...)
			attrs = append(attrs, slog.String("code", code), slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
				slog.Bool("cached", c.Cached))
			if p := c.Principal; p != nil {
				attrs = append(attrs, slog.String("principal", p.Subject), slog.String("tenant", p.Tenant))
			}
			if cause != nil {
				attrs = append(attrs, slog.String("error", cause.Error()))
			} else if err != nil {
				attrs = append(attrs, slog.String("error", err.Error()))
			}
			if c.Decision == "deny" {
				// A denial the caller sees as a missing tool says why here.
				attrs = append(attrs, slog.String("deny_reason", c.Reason))
			}
			// The record goes to the handler directly: Logger.LogAttrs
			// would also walk the stack for a source position the
			// handlers are not asked to print (about a tenth of the
			// line's cost, BenchmarkChainSteps under callgrind).
			r := slog.NewRecord(time.Now(), level, "call finished", 0)
			r.AddAttrs(attrs...)
			_ = logger.Handler().Handle(ctx, r)
		}
		return resp, err
	}
}

// mdCarrier adapts incoming gRPC metadata to a propagation carrier.
type mdCarrier metadata.MD

func (m mdCarrier) Get(key string) string {
	if vs := metadata.MD(m).Get(key); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

func (m mdCarrier) Set(key, value string) { metadata.MD(m).Set(key, value) }

func (m mdCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
