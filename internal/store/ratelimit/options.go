package ratelimit

import (
	"log/slog"
	"time"
)

const (
	defaultMaxKeys     = 100_000
	defaultPrefix      = "toolsvc:rl:"
	defaultTimeout     = 50 * time.Millisecond
	defaultLogInterval = 10 * time.Second
)

// Option configures NewMemory, NewRedis or WithFallback. Each option documents which of them it affects; the
// others ignore it, so one option list can be shared.
type Option func(*options)

type options struct {
	clock       func() time.Time
	maxKeys     int
	prefix      string
	timeout     time.Duration
	logInterval time.Duration
	onError     func(error)
}

func newOptions(opts []Option) options {
	o := options{
		clock:       time.Now,
		maxKeys:     defaultMaxKeys,
		prefix:      defaultPrefix,
		timeout:     defaultTimeout,
		logInterval: defaultLogInterval,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithClock sets the time source of Memory and of WithFallback's log throttling. The default is time.Now; tests
// pass a fake clock. Redis ignores it: it always uses the Redis server clock so replicas agree.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.clock = now
		}
	}
}

// WithMaxKeys caps the number of keys Memory tracks. The default is 100,000. When the cap is reached the least
// recently used key is dropped: idle keys cost nothing, a key still in its window loses its history (counted
// in Stats.Evictions). Memory use is about maxKeys × (Max × 8 bytes + 100 bytes) at worst. Values below 1 are
// ignored.
func WithMaxKeys(n int) Option {
	return func(o *options) {
		if n >= 1 {
			o.maxKeys = n
		}
	}
}

// WithPrefix sets the prefix of every Redis key. The default is "toolsvc:rl:". The caller's key is hashed
// (SHA-256) after the prefix, so user input never forms a raw Redis key.
func WithPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// WithTimeout bounds every Redis call. The default is 50 ms: a rate-limit check must never hold up a tool call
// for longer than that, and WithFallback decides what a timed-out check means. Values <= 0 are ignored.
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithLogInterval sets how often WithFallback logs backend failures: at most one warning per interval, with
// the number of failures since the last one. The default is 10 s. Values <= 0 are ignored.
func WithLogInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.logInterval = d
		}
	}
}

// WithErrorHook sets a function WithFallback calls, synchronously, for every backend failure it absorbs — the
// place to increment a metric. It must be fast and safe for concurrent use. The default is none.
func WithErrorHook(hook func(error)) Option {
	return func(o *options) { o.onError = hook }
}

func discardLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
