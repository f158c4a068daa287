// Command deploys runs the example upstream MCP server of
// examples/upstreams, built with mark3labs/mcp-go: over Streamable HTTP
// (`go run ./cmd/deploys` in examples/upstreams/deploys, listening on
// 127.0.0.1:9292/mcp) or over stdio (-stdio). toolsvc serves its tools with
// `toolsvc serve --upstreams examples/upstreams/upstreams.yaml`.
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsvc/toolsvc/examples/upstreams/deploys/deploysrv"
)

func main() { os.Exit(run()) }

func run() int {
	addr := flag.String("addr", "127.0.0.1:9292", "listen address of the Streamable HTTP endpoint /mcp")
	stdio := flag.Bool("stdio", false, "speak MCP on stdin and stdout instead of HTTP")
	tokenEnv := flag.String("token-env", "DEPLOYS_TOKEN", "environment variable holding the bearer token HTTP callers must present (unset: no check)")
	delay := flag.Duration("delay", 0, "delay every call (to see toolsvc's TIMEOUT)")
	junk := flag.Bool("junk", false, "answer every call with a result that breaks its outputSchema")
	bad := flag.Bool("bad-tools", false, "also list tools that break the upstream contract (no outputSchema, free-form parameters)")
	grow := flag.Duration("grow-after", 0, "add the tool get-deployment this long after start (clients hear tools/list_changed)")
	toolsvcURL := flag.String("toolsvc", "", "toolsvc's public URL (the assertions' issuer): take the caller from its signed toolsvc/identity, verified against its JWKS (none: read the plain toolsvc/tenant and toolsvc/subject)")
	jwksURL := flag.String("jwks", "", "where toolsvc's JWKS is (default TOOLSVC/.well-known/jwks.json)")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	o := deploysrv.Options{Delay: *delay, Junk: *junk, BadTools: *bad, GrowAfter: *grow}
	if *toolsvcURL != "" {
		if *jwksURL == "" {
			*jwksURL = *toolsvcURL + "/.well-known/jwks.json"
		}
		o.Verifier = &deploysrv.Verifier{JWKSURL: *jwksURL, Issuer: *toolsvcURL, Audience: "deploys"}
	}
	srv := deploysrv.New(o)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *stdio {
		if err := server.NewStdioServer(srv).Listen(ctx, os.Stdin, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
			logger.Error("stdio", slog.String("error", err.Error()))
			return 1
		}
		return 0
	}
	token := os.Getenv(*tokenEnv)
	mcpHTTP := server.NewStreamableHTTPServer(srv)
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHTTP.ServeHTTP(w, r)
	}))
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logger.Info("deploys listening", slog.String("url", "http://"+lis.Addr().String()+"/mcp"))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("serve", slog.String("error", err.Error()))
		return 1
	}
	return 0
}
