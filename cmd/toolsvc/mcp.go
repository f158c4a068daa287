package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/toolsvc/toolsvc/internal/logsink"
	"github.com/toolsvc/toolsvc/internal/registry"
	"github.com/toolsvc/toolsvc/internal/server"
)

// cmdMCP serves MCP over stdio for a desktop agent: the same server and
// chain as `toolsvc serve`, without listeners. Standard output carries only
// JSON-RPC; logs go to standard error. Credentials come from --token (or
// TOOLSVC_TOKEN) and are sent with every call as the authorization
// metadata; without an auth file the server runs in development mode.
func cmdMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newServerFlags("mcp", stderr)
	token := f.fs.String("token", "", "bearer token (API key or JWT) for every call; default $TOOLSVC_TOKEN")
	if err := f.parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "toolsvc mcp: %v\n", err)
		return 2
	}
	f.cfg.DisableHTTP, f.cfg.DisableGRPC = true, true
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
	defer srv.Close()
	authorization := ""
	if *token == "" {
		*token = os.Getenv("TOOLSVC_TOKEN")
	}
	if *token != "" {
		authorization = "Bearer " + *token
	}
	logger.Info("serving MCP on stdio")
	if err := srv.MCP().ServeStdio(ctx, stdin, stdout, authorization); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("stdio", slog.String("error", err.Error()))
		return 1
	}
	return 0
}
