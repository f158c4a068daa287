package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// heldSync is the real sync service held at its start until released.
type heldSync struct {
	syncv1.SyncServiceServer
	started, release chan struct{}
}

func (h *heldSync) SyncKnowledge(ctx context.Context, req *syncv1.SyncKnowledgeRequest) (*syncv1.SyncKnowledgeResponse, error) {
	h.started <- struct{}{}
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.SyncServiceServer.SyncKnowledge(ctx, req)
}

// TestShutdownDrainsInOrder is SIGTERM (Run's context ending) on the real
// server and listeners: /readyz turns 503 at once while /healthz stays 200
// and new calls are still served for the drain delay; then the listener
// closes, a call started before the shutdown still completes, and Run
// returns nil with no goroutine left.
func TestShutdownDrainsInOrder(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	held := &heldSync{started: make(chan struct{}, 1), release: make(chan struct{})}
	services := func(ctx context.Context, d server.Deps) ([]registry.Service, func(), error) {
		svcs, cleanup, err := server.Builtin(ctx, d)
		for i := range svcs {
			if svcs[i].Desc == &syncv1.SyncService_ServiceDesc {
				held.SyncServiceServer = svcs[i].Impl.(syncv1.SyncServiceServer)
				svcs[i].Impl = held
			}
		}
		return svcs, cleanup, err
	}
	cfg := server.Defaults()
	cfg.DisableGRPC = true
	cfg.DB = filepath.Join(t.TempDir(), "t.db")
	cfg.KnowledgeDir = testserver.KnowledgeDir(t)
	// Long enough that the calls below fall inside it on a loaded
	// machine; the test waits for the listener to close, never for a time.
	cfg.ShutdownDrain = 3 * time.Second
	cfg.ShutdownGrace = time.Minute
	cfg.ListStatsInterval = -1
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	ctx, sigterm := context.WithCancel(context.Background())
	defer sigterm()
	srv, err := server.New(ctx, &cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), services)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + lis.Addr().String()
	ran := make(chan error, 1)
	go func() { ran <- srv.RunOn(ctx, nil, lis) }()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	get := func(path string) (int, error) {
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	call := func(tool, body string) (int, string, error) {
		resp, err := client.Post(base+"/v1/tools/"+tool+":call", "application/json", strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	if code, err := get("/readyz"); err != nil || code != http.StatusOK {
		t.Fatalf("/readyz before shutdown: %d %v", code, err)
	}

	type result struct {
		code int
		body string
		err  error
	}
	inFlight := make(chan result, 1)
	go func() {
		code, body, err := call("sync-knowledge", `{}`)
		inFlight <- result{code, body, err}
	}()
	select {
	case <-held.started:
	case r := <-inFlight:
		t.Fatalf("the held call ended before it was held: %d %v %s", r.code, r.err, r.body)
	case <-time.After(30 * time.Second):
		t.Fatal("the held call did not start")
	}

	sigterm()
	if code, err := get("/readyz"); err != nil || code != http.StatusServiceUnavailable {
		// The flag is set by the shutdown goroutine: give it its turn.
		deadline := time.Now().Add(10 * time.Second)
		for (err != nil || code != http.StatusServiceUnavailable) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			code, err = get("/readyz")
		}
		if code != http.StatusServiceUnavailable {
			t.Fatalf("/readyz during the drain: %d %v, want 503", code, err)
		}
	}
	if code, err := get("/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz during the drain: %d %v, want 200 (liveness)", code, err)
	}
	if code, body, err := call("search-memories", `{"query": "drain"}`); err != nil || code != http.StatusOK {
		t.Fatalf("a call during the drain: %d %v %s, want 200", code, err, body)
	}
	// After the drain the listener closes: wait for that, then let the
	// call that started before the shutdown finish.
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := get("/healthz"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the listener did not close after the drain")
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(held.release)
	r := <-inFlight
	if r.err != nil || r.code != http.StatusOK {
		t.Fatalf("the in-flight call: %d %v %s, want 200", r.code, r.err, r.body)
	}
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
