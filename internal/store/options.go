package store

import "log/slog"

// Option configures a backend at open time.
type Option func(*Config)

// Config is the result of applying Options. Backends read it; callers use
// the WithX functions instead of building it.
type Config struct {
	// Logger receives migration and connection events.
	Logger *slog.Logger
	// MaxConns bounds the backend's connection pool; 0 means the backend's
	// default.
	MaxConns int
	// WALRestartFrames is the SQLite WAL length that forces a restart; 0
	// means the backend's default, negative never forces one.
	WALRestartFrames int
}

// NewConfig applies opts over the defaults.
func NewConfig(opts ...Option) Config {
	c := Config{Logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&c)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxConns < 0 {
		c.MaxConns = 0
	}
	return c
}

// WithLogger sets the logger for migration and connection events. The
// default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *Config) { c.Logger = l }
}

// WithMaxConns bounds the connection pool. For SQLite it is the number of
// reader connections (writes always go through one connection); the default
// is max(4, GOMAXPROCS). For PostgreSQL it is the pool size; the default is
// pool_max_conns from the DSN, else max(4, NumCPU). n <= 0 keeps the
// default.
func WithMaxConns(n int) Option {
	return func(c *Config) { c.MaxConns = n }
}

// WithWALRestartFrames sets the length (in frames) past which the SQLite
// checkpointer forces a RESTART of the write-ahead log. The default is
// 1,000 frames (4 MiB); n < 0 never forces one (a benchmark of a long WAL
// uses it). PostgreSQL ignores it. It is fixed at open time, so the
// checkpointer goroutine never reads a value that changes under it.
func WithWALRestartFrames(n int) Option {
	return func(c *Config) { c.WALRestartFrames = n }
}
