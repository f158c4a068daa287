package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsvc/toolsvc/internal/auth"
)

// Changes without a restart (docs/OPERATIONS.md "Reloading"): the auth
// file is read again on SIGHUP and when its modification time changes
// (checked every Config.AuthPoll), validated whole, and swapped in at once
// (auth.Authenticator.Reload). A file that does not load keeps the policy
// in force; why is logged, counted (toolsvc_auth_reloads_total{result=
// "error"}, toolsvc_auth_reload_failing 1) and shown on the operator view.
// After a swap the MCP bridge ends the sessions and listen streams of
// credentials the new policy no longer admits.

// authStatus is what the operator view says of the auth file.
type authStatus struct {
	File       string    `json:"file"`
	Generation int       `json:"generation"`
	LoadedAt   time.Time `json:"loadedAt"`
	// LastError is why the latest reload failed; empty when it succeeded.
	LastError   string     `json:"lastError,omitempty"`
	LastErrorAt *time.Time `json:"lastErrorAt,omitempty"`
}

// authReloads holds the reload state and its metrics.
type authReloads struct {
	mu      sync.Mutex
	status  authStatus
	total   *prometheus.CounterVec
	failing prometheus.Gauge
}

func newAuthReloads(reg prometheus.Registerer, file string) *authReloads {
	r := &authReloads{
		status: authStatus{File: file, Generation: 1, LoadedAt: time.Now().UTC()},
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsvc_auth_reloads_total", Help: "Reloads of the auth file by result (ok, error).",
		}, []string{"result"}),
		failing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "toolsvc_auth_reload_failing", Help: "1 while the latest reload of the auth file failed (the previous policy stays in force).",
		}),
	}
	r.total.WithLabelValues("ok")
	r.total.WithLabelValues("error")
	reg.MustRegister(r.total, r.failing)
	return r
}

func (r *authReloads) snapshot() authStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// ReloadAuth reads the auth file again and puts it in force; a file that
// does not load leaves the policy as it was and is returned.
func (s *Server) ReloadAuth(ctx context.Context) error {
	if s.cfg.AuthFile == "" || s.authReloads == nil {
		return &auth.ConfigError{Problems: []string{"no auth file to reload (development mode)"}}
	}
	ac, err := auth.LoadFile(s.cfg.AuthFile)
	if err == nil {
		err = s.auth.Reload(ctx, ac, auth.WithLogger(s.logger))
	}
	r := s.authReloads
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		now := time.Now().UTC()
		r.status.LastError, r.status.LastErrorAt = err.Error(), &now
		r.total.WithLabelValues("error").Inc()
		r.failing.Set(1)
		s.logger.Error("auth file not reloaded: the previous policy stays in force",
			slog.String("file", s.cfg.AuthFile), slog.String("error", err.Error()))
		return err
	}
	for _, w := range ac.Warnings() {
		s.logger.Warn("auth file", slog.String("warning", w))
	}
	r.status.Generation++
	r.status.LoadedAt, r.status.LastError, r.status.LastErrorAt = time.Now().UTC(), "", nil
	r.total.WithLabelValues("ok").Inc()
	r.failing.Set(0)
	s.logger.Info("auth file reloaded", slog.String("file", s.cfg.AuthFile), slog.Int("generation", r.status.Generation),
		slog.Int("api_keys", len(ac.APIKeys)), slog.Int("client_certs", len(ac.ClientCerts)))
	return nil
}

// endRevoked ends the conversations of credentials the policy in force no
// longer admits; it runs after every swap.
func (s *Server) endRevoked() {
	if s.mcp != nil {
		s.mcp.EndRevoked(s.auth.Admits)
	}
}

// watchAuth reloads the auth file on SIGHUP and when its modification
// time changes (checked every AuthPoll; negative: on SIGHUP only), until
// ctx ends.
func (s *Server) watchAuth(ctx context.Context) {
	s.watchFile(ctx, "auth", s.cfg.AuthFile, s.cfg.AuthPoll, s.ReloadAuth)
}
