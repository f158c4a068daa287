package cache

import (
	"log/slog"
	"time"
)

const (
	defaultPrefix      = "toolsvc:cache:"
	defaultTimeout     = 50 * time.Millisecond
	defaultLogInterval = 10 * time.Second
)

// Option configures NewMemory, NewRedis or NewGroup. Each option documents which of them it affects; the
// others ignore it.
type Option func(*options)

type options struct {
	clock       func() time.Time
	prefix      string
	timeout     time.Duration
	logger      *slog.Logger
	logInterval time.Duration
}

func newOptions(opts []Option) options {
	o := options{
		clock:       time.Now,
		prefix:      defaultPrefix,
		timeout:     defaultTimeout,
		logger:      slog.New(slog.DiscardHandler),
		logInterval: defaultLogInterval,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithClock sets the time source Memory uses for expiry and NewGroup for log throttling. The default is
// time.Now; tests pass a fake clock. Redis ignores it: Redis expires keys on its own clock.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.clock = now
		}
	}
}

// WithPrefix sets the prefix of every Redis key. The default is "toolsvc:cache:". Everything after it is a
// hash, so user input never forms a raw Redis key.
func WithPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// WithTimeout bounds every Redis call. The default is 50 ms: a cache that answers slower than that is worse
// than none, and Group treats a timeout as a miss. Values <= 0 are ignored.
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithLogger sets the logger NewGroup reports degraded cache calls to, at most one warning per
// WithLogInterval. The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithLogInterval sets how often NewGroup logs cache failures: at most one warning per interval, with the
// number suppressed since the last one. The default is 10 s. Values <= 0 are ignored.
func WithLogInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.logInterval = d
		}
	}
}
