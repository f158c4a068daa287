package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

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
	f.cfg.DisableHTTP, f.cfg.DisableGRPC = true, true
	if code := parseServerFlags(f, "mcp", args, stderr); code >= 0 {
		return code
	}
	authorization := ""
	if *token == "" {
		*token = os.Getenv("TOOLSVC_TOKEN")
	}
	if *token != "" {
		authorization = "Bearer " + *token
	}
	return runServer(ctx, &f.cfg, stderr, func(ctx context.Context, srv *server.Server, logger *slog.Logger) error {
		// Run owns the background jobs (no listeners: both are disabled)
		// and closes everything once stdio is done.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ran := make(chan error, 1)
		go func() { ran <- srv.Run(ctx) }()
		logger.Info("serving MCP on stdio")
		err := srv.MCP().ServeStdio(ctx, stdin, stdout, authorization)
		cancel()
		runErr := <-ran
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return runErr
	})
}
