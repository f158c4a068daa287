// Command tickets runs the example upstream gRPC service of
// examples/upstreams: `go run ./examples/upstreams/tickets/cmd/tickets`.
// toolsvc serves its tools with
// `toolsvc serve --upstreams examples/upstreams/upstreams.yaml`.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/toolsvc/toolsvc/examples/upstreams/tickets/ticketsrv"
)

func main() { os.Exit(run()) }

// run serves until SIGINT or SIGTERM and returns the exit code, so that
// its deferred calls run before the process exits.
func run() int {
	addr := flag.String("addr", "127.0.0.1:9191", "listen address")
	tokenEnv := flag.String("token-env", "TICKETS_TOKEN", "environment variable holding the bearer token callers must present (none: no check)")
	noReflection := flag.Bool("no-reflection", false, "do not serve gRPC server reflection")
	delay := flag.Duration("delay", 0, "delay every call (to see toolsvc's TIMEOUT)")
	junk := flag.Bool("junk", false, "answer every call with bytes that are not a protobuf message")
	toolsvcURL := flag.String("toolsvc", "", "toolsvc's public URL: take the caller from its signed x-toolsvc-identity, verified against URL/.well-known/jwks.json (none: read the plain x-toolsvc-* headers)")
	jwksURL := flag.String("jwks", "", "where toolsvc's JWKS is (default TOOLSVC/.well-known/jwks.json)")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var opts []grpc.ServerOption
	if *junk {
		opts = append(opts, grpc.ForceServerCodec(ticketsrv.JunkCodec{}))
	}
	srv := grpc.NewServer(opts...)
	o := ticketsrv.Options{Token: os.Getenv(*tokenEnv), Delay: *delay}
	if *toolsvcURL != "" {
		if *jwksURL == "" {
			*jwksURL = *toolsvcURL + "/.well-known/jwks.json"
		}
		o.Verifier = &ticketsrv.Verifier{JWKSURL: *jwksURL, Issuer: *toolsvcURL, Audience: "tickets"}
	}
	ticketsrv.New(o).Register(srv)
	if !*noReflection {
		if err := ticketsrv.RegisterReflection(srv); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logger.Info("tickets listening", slog.String("addr", lis.Addr().String()), slog.Bool("reflection", !*noReflection))
	go func() {
		<-ctx.Done()
		done := make(chan struct{})
		go func() { srv.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			srv.Stop()
		}
	}()
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
