package server

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolsvc/toolsvc/internal/base/redact"
	"github.com/toolsvc/toolsvc/internal/base/version"
)

// tracer returns the tracer of the chain: spans exported over OTLP/HTTP to
// cfg.OTLPEndpoint, or nil (no spans) when export is off, the default.
func (s *Server) tracer(ctx context.Context, stack *closers) (trace.Tracer, error) {
	if s.cfg.OTLPEndpoint == "" {
		return nil, nil
	}
	u, err := url.Parse(s.cfg.OTLPEndpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("otlp endpoint %q: want a URL such as http://127.0.0.1:4318", redact.URL(s.cfg.OTLPEndpoint))
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host), otlptracehttp.WithTimeout(5 * time.Second)}
	if u.Scheme == "http" {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	if u.Path != "" && u.Path != "/" {
		opts = append(opts, otlptracehttp.WithURLPath(u.Path))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	res := sdkresource.NewSchemaless(semconv.ServiceName(version.Name), semconv.ServiceVersion(version.Version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	stack.push(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
	})
	return tp.Tracer("github.com/toolsvc/toolsvc"), nil
}
