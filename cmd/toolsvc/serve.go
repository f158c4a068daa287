package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/toolsvc/toolsvc/internal/server"
)

// cmdServe runs the service until ctx ends (SIGINT or SIGTERM), then
// shuts it down as server.Run describes, and exits 0.
func cmdServe(ctx context.Context, args []string, stderr io.Writer) int {
	f := newServerFlags("serve", stderr)
	if code := parseServerFlags(f, "serve", args, stderr); code >= 0 {
		return code
	}
	return runServer(ctx, &f.cfg, stderr, func(ctx context.Context, srv *server.Server, _ *slog.Logger) error {
		return srv.Run(ctx)
	})
}
