package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"

	"github.com/toolsvc/toolsvc/internal/logsink"
	"github.com/toolsvc/toolsvc/internal/registry"
	"github.com/toolsvc/toolsvc/internal/server"
)

func cmdServe(ctx context.Context, args []string, stderr io.Writer) int {
	f := newServerFlags("serve", stderr)
	if err := f.parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "toolsvc serve: %v\n", err)
		return 2
	}
	// Access lines go out in batches from a goroutine of their own
	// (internal/logsink): one write per line, under slog's lock, cost the
	// calls more than the line itself. Close writes what is left; a log
	// that cannot be written has nowhere to say so.
	logw := logsink.New(stderr)
	defer func() { _ = logw.Close() }()
	logger := newLogger(&f.cfg, logw)
	srv, err := server.New(ctx, &f.cfg, logger, server.Builtin)
	if err != nil {
		if ce, ok := registry.AsCheckError(err); ok {
			for _, v := range ce.Violations {
				logger.Error("tool contract violation", slog.String("tool", v.Tool), slog.String("rule", v.Rule), slog.String("message", v.Message))
			}
		}
		logger.Error("cannot start", slog.String("error", err.Error()))
		return 1
	}
	// Start-up builds the registry, derives every schema and compiles the
	// validation rules: about 20 MB of garbage around 7 MB that stays. Give
	// the freed pages back now rather than when the scavenger gets to them,
	// so an idle service holds what it uses (docs/BENCHMARKS.md, idle RSS).
	debug.FreeOSMemory()
	if err := srv.Run(ctx); err != nil {
		logger.Error("stopped with error", slog.String("error", err.Error()))
		return 1
	}
	logger.Info("stopped")
	return 0
}
