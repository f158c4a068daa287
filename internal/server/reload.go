package server

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/toolsvc/toolsvc/gen/descriptor"
	"github.com/toolsvc/toolsvc/internal/base/periodic"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

// The live registry: tools of upstreams appear and disappear while the
// service runs. The upstreams file is read again on SIGHUP and when its
// modification time changes (Config.UpstreamsPoll); an MCP server's
// notifications/tools/list_changed reads that server's tools again. Each
// change builds a whole new registry from the in-tree services and the
// upstreams' and swaps it in at once: a call resolves its tool in one
// snapshot and finishes on it, ToolService's tool-list cache starts
// afresh, the MCP bridge renders the new list and tells its clients
// (notifications/tools/list_changed), /openapi.json follows, and the
// console, a client of /v1/tools, with it. A definition that fails the
// checklist or claims a name another source serves is refused at each
// build, as at start-up, never served in place of the other.

// buildRegistry builds a registry of svcs and logs the refusals.
func (s *Server) buildRegistry(svcs []registry.Service) (*registry.Registry, error) {
	reg, err := registry.New(svcs, registry.WithSourceInfo(descriptor.Set))
	if err != nil {
		return nil, err
	}
	for _, r := range reg.Refused() {
		s.logger.Error("tool refused: not served", slog.String("source", r.Source), slog.String("tool", r.Tool),
			slog.String("method", r.Method), slog.String("rule", r.Rule), slog.String("message", r.Message))
	}
	return reg, nil
}

// Reload reads the upstreams file again, connects to its upstreams and
// serves their tools in place of the previous upstreams'. A file that does
// not parse, or a registry that cannot be built, leaves everything as it
// was and is returned. The previous upstreams are closed once calls that
// started on them have had their deadline.
func (s *Server) Reload(ctx context.Context) error {
	if s.cfg.UpstreamsFile == "" {
		return errors.New("no upstreams file to reload")
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	ups, err := upstream.Load(ctx, s.cfg.UpstreamsFile, s.logger, s.upstreamOptions()...)
	if err != nil {
		s.logger.Error("upstreams file not reloaded: the previous upstreams stay in service", slog.String("error", err.Error()))
		return err
	}
	reg, err := s.buildRegistry(append(slices.Clone(s.builtin), ups.Services()...))
	if err != nil {
		ups.Close()
		s.logger.Error("upstreams file not reloaded: the previous upstreams stay in service", slog.String("error", err.Error()))
		return err
	}
	old := s.upstreams.Swap(ups)
	s.publish(reg, ups)
	if old != nil {
		retire := sync.OnceFunc(old.Close)
		if s.retiring == nil {
			s.retiring = map[*upstream.Set]func(){}
		}
		s.retiring[old] = retire
		time.AfterFunc(old.MaxTimeout()+time.Second, func() {
			retire()
			s.reloadMu.Lock()
			delete(s.retiring, old)
			s.reloadMu.Unlock()
		})
	}
	s.logger.Info("upstreams file reloaded", slog.String("file", s.cfg.UpstreamsFile), slog.Int("tools", reg.Len()))
	return nil
}

// upstreamsChanged builds the registry again from the current upstreams:
// an MCP server's tool list changed.
func (s *Server) upstreamsChanged() {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	ups := s.upstreams.Load()
	if ups == nil || s.registry == nil {
		return
	}
	reg, err := s.buildRegistry(append(slices.Clone(s.builtin), ups.Services()...))
	if err != nil {
		s.logger.Error("registry not rebuilt after an upstream's tools changed", slog.String("error", err.Error()))
		return
	}
	s.publish(reg, ups)
}

// publish serves reg everywhere: the upstreams' methods on the in-process
// channel (the MCP bridge calls tools by method), then the one registry
// holder, which the chain, ToolService, the MCP bridge and /openapi.json
// read (the bridge watches it to tell its clients).
func (s *Server) publish(reg *registry.Registry, ups *upstream.Set) {
	for _, svc := range ups.Services() {
		s.channel.RegisterService(svc.Desc, svc.Impl)
	}
	s.registry.Store(reg)
}

// watchUpstreams reloads the upstreams file on SIGHUP and when its
// modification time changes (checked every UpstreamsPoll; 0: on SIGHUP
// only), until ctx ends.
func (s *Server) watchUpstreams(ctx context.Context) {
	s.watchFile(ctx, "upstreams", s.cfg.UpstreamsFile, s.cfg.UpstreamsPoll, s.Reload)
}

// watchFile calls reload on SIGHUP and when path's modification time
// changes (checked every poll; not positive: on SIGHUP only), one reload
// at a time, until ctx ends. The auth file and the upstreams file are
// watched alike; what is the file's name in the log lines.
func (s *Server) watchFile(ctx context.Context, what, path string, poll time.Duration, reload func(context.Context) error) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var (
		mu    sync.Mutex // orders the two reasons to reload
		mtime = modTime(path)
	)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		periodic.Run(ctx, poll, func(ctx context.Context) {
			mu.Lock()
			defer mu.Unlock()
			if m := modTime(path); !m.Equal(mtime) {
				mtime = m
				s.logger.Info("the "+what+" file changed: reloading it", slog.String("file", path))
				_ = reload(ctx)
			}
		})
	}()
	defer func() { <-polled }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			mu.Lock()
			s.logger.Info("SIGHUP: reloading the "+what+" file", slog.String("file", path))
			mtime = modTime(path)
			_ = reload(ctx)
			mu.Unlock()
		}
	}
}

func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}
