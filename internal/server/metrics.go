package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/toolsvc/toolsvc/internal/base/loopback"
)

// metricsOnMain is /metrics on the main HTTP listener: it shows the
// deployment's tools, traffic and errors, so it needs a credential holding
// metrics:read (development mode's anonymous principal holds it). A scrape
// allowed is not audited (one every few seconds would fill the audit
// store); a scrape refused is, like any decision about a principal.
func (s *Server) metricsOnMain() http.Handler {
	h := promhttpHandler(s.metrics)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.operator(w, r, PermissionMetricsRead, "GET /metrics", false) == nil {
			return
		}
		h.ServeHTTP(w, r)
	})
}

// metricsHandler is the --metrics-addr listener's: GET /metrics without a
// credential, and nothing else. The operator binds it to an address only
// the scraper reaches (loopback, a pod's or a private network's), the way
// Prometheus scrapes usually work. While it listens on loopback it answers
// only requests whose Host is empty, an IP address or localhost: a web
// page whose name was rebound to 127.0.0.1 sends its own name, and must
// not read the figures.
func (s *Server) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttpHandler(s.metrics))
	if !loopback.Addr(s.cfg.MetricsAddr) {
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !addressHost(r.Host) {
			http.Error(w, "forbidden: call the metrics listener by address or as localhost", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// addressHost reports whether a Host header is empty, an IP address
// (with or without a port) or localhost: no DNS rebinding sends those.
func addressHost(hostport string) bool {
	if hostport == "" || loopback.HostPort(hostport) {
		return true
	}
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return net.ParseIP(strings.Trim(h, "[]")) != nil
}

// serveMetrics binds --metrics-addr (when set) and serves /metrics there
// in g until ctx ends, with the main listeners' TLS when they have it.
func (s *Server) serveMetrics(ctx context.Context, g *errgroup.Group) error {
	if s.cfg.MetricsAddr == "" {
		return nil
	}
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", s.cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("listen metrics on %s: %w", s.cfg.MetricsAddr, err)
	}
	s.logger.Info("metrics listening", slog.String("addr", lis.Addr().String()), slog.Bool("tls", s.tls != nil))
	srv := &http.Server{Handler: s.metricsHandler(), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10, IdleTimeout: 2 * time.Minute}
	serve := func() error { return srv.Serve(lis) }
	if s.tls != nil {
		srv.TLSConfig = s.tls.serverConfig("http/1.1")
		serve = func() error { return srv.ServeTLS(lis, "", "") }
	}
	g.Go(func() error {
		if err := serve(); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	})
	return nil
}

// closeListeners closes the listeners RunOn was given when it cannot serve.
func closeListeners(ls ...net.Listener) {
	for _, l := range ls {
		if l != nil {
			_ = l.Close()
		}
	}
}
