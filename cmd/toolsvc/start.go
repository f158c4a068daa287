package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/toolsvc/toolsvc/internal/base/logsink"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/server"
)

// services builds the tool services of serve and mcp. Tests replace it to
// start a server with a contract violation.
var services server.ServicesFunc = server.Builtin

// parseServerFlags parses the flags of serve or mcp. It returns the exit
// status to end with, or -1 to go on: 0 after -h, 2 for a usage error,
// 1 for a configuration Complete refused (printed as a start-up failure).
func parseServerFlags(f *serverFlags, name string, args []string, stderr io.Writer) int {
	err := f.parse(args)
	var ce *configError
	switch {
	case err == nil:
		return -1
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ce):
		return cannotStart(stderr, err)
	default:
		fmt.Fprintf(stderr, "toolsvc %s: %v\n", name, err)
		return 2
	}
}

// runServer builds the server of cfg and hands it to serve, which returns
// when the server has stopped. Every failure to start — to build the
// server, or serve's StartError — is one line on stderr, `cannot start:
// <reason>`, after everything acquired has been released, and exit status
// 1; a contract violation's report (one log line per violation) comes
// before it.
func runServer(ctx context.Context, cfg *server.Config, stderr io.Writer, serve func(context.Context, *server.Server, *slog.Logger) error) int {
	// Access lines go out in batches from a goroutine of their own
	// (internal/base/logsink): one write per line, under slog's lock, cost the
	// calls more than the line itself. Closing it writes what is left; a
	// log that cannot be written has nowhere to say so.
	logw := logsink.New(stderr)
	logger := newLogger(cfg, logw)
	restoreGC := startupGC()
	srv, err := server.New(ctx, cfg, logger, services)
	restoreGC()
	if err != nil {
		if ce, ok := registry.AsCheckError(err); ok {
			for _, v := range ce.Violations {
				logger.Error("tool contract violation", slog.String("tool", v.Tool), slog.String("rule", v.Rule), slog.String("message", v.Message))
			}
		}
		_ = logw.Close()
		return cannotStart(stderr, err)
	}
	// Start-up builds the registry, derives every schema and compiles the
	// validation rules: far more garbage than what stays (measured:
	// docs/BENCHMARKS.md, "Design measurements"). Give
	// the freed pages back now rather than when the scavenger gets to them,
	// so an idle service holds what it uses (docs/BENCHMARKS.md, idle RSS).
	debug.FreeOSMemory()
	releaseStartupPages()
	err = serve(ctx, srv, logger)
	switch {
	case errors.Is(err, server.ErrListen):
		_ = logw.Close()
		return cannotStart(stderr, err)
	case err != nil:
		logger.Error("stopped with error", slog.String("error", err.Error()))
		_ = logw.Close()
		return 1
	}
	logger.Info("stopped")
	_ = logw.Close()
	return 0
}

// cannotStart prints the reason a start-up failed as one line and returns
// the exit status 1.
func cannotStart(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "cannot start: %s\n", oneLine(err.Error()))
	return 1
}

// oneLine joins the lines of a message (errors.Join's, a list after a
// colon) into one: "; " between them, a space after a colon.
func oneLine(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		switch {
		case b.Len() == 0:
		case strings.HasSuffix(b.String(), ":"):
			b.WriteString(" ")
		default:
			b.WriteString("; ")
		}
		b.WriteString(l)
	}
	return b.String()
}

// startupGCPercent is the collector's target while the server is built.
// Start-up allocates several times what it keeps (the registry, derived
// schemas, validation rules): at Go's default target the collector runs
// repeatedly while the heap grows, about a tenth of start-up's time
// (docs/BENCHMARKS.md, "Where the chain's time goes"). FreeOSMemory
// collects once at its end instead.
const startupGCPercent = 400

// startupGC raises the collector's target for start-up when it is Go's
// default (no GOGC given: an operator's own choice, or GOGC=off, is kept)
// and returns the function that puts it back. GOMEMLIMIT bounds the heap
// either way.
func startupGC() (restore func()) {
	prev := debug.SetGCPercent(startupGCPercent)
	if prev != 100 {
		debug.SetGCPercent(prev)
		return func() {}
	}
	return func() { debug.SetGCPercent(prev) }
}
