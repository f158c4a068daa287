package interceptors

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsvc/toolsvc/internal/auth"
)

// authFailureLogEvery is the least time between two log lines about failed
// authentications: a flood of bad credentials costs one line per interval,
// which says how many it stands for.
const authFailureLogEvery = 10 * time.Second

// AuthFailures counts failed authentications by transport and reason
// (toolsvc_auth_failures_total) and logs them at a bounded rate. They are
// not audited: the audit trail records decisions about authenticated
// principals, and an unauthenticated flood must not be able to fill it.
// The chain records the failures it sees; the MCP bridge records the ones
// it answers with HTTP 401 before a call reaches the chain.
type AuthFailures struct {
	counter *prometheus.CounterVec
	logger  *slog.Logger
	every   time.Duration

	mu         sync.Mutex
	next       time.Time
	suppressed int
}

// NewAuthFailures creates the counter, registers it on reg (nil: not
// registered) and logs to logger.
func NewAuthFailures(reg prometheus.Registerer, logger *slog.Logger) *AuthFailures {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &AuthFailures{
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolsvc_auth_failures_total", Help: "Failed authentications by transport and reason; they are not audited.",
		}, []string{"transport", "reason"}),
		logger: logger, every: authFailureLogEvery,
	}
	if reg != nil {
		reg.MustRegister(a.counter)
	}
	return a
}

// Record counts one failed authentication of transport for err's reason,
// and logs it unless a line was written within the interval (the next line
// counts the ones left out).
func (a *AuthFailures) Record(transport string, err error) {
	if a == nil {
		return
	}
	reason := auth.InvalidCredentials.String()
	var ae *auth.Error
	if errors.As(err, &ae) {
		reason = ae.Reason.String()
	}
	a.counter.WithLabelValues(transport, reason).Inc()
	now := time.Now()
	a.mu.Lock()
	if now.Before(a.next) {
		a.suppressed++
		a.mu.Unlock()
		return
	}
	suppressed := a.suppressed
	a.suppressed, a.next = 0, now.Add(a.every)
	a.mu.Unlock()
	// The reason only: never the credential or its detail.
	a.logger.Warn("authentication failed", slog.String("transport", transport), slog.String("reason", reason),
		slog.Int("not_logged_since_last", suppressed))
}
