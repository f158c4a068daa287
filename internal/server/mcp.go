package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/toolsvc/toolsvc/internal/base/mcptask"
	"net/http"
	"os"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/loopback"
	"github.com/toolsvc/toolsvc/internal/base/version"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/store/redisfleet"
)

// mountMCP builds the MCP bridge, a client of the in-process channel (the
// same chain as gRPC), and serves it at /mcp with the OAuth protected
// resource metadata MCP clients discover from a 401.
func (s *Server) mountMCP(stack *closers) error {
	// The bridge's settings are s.cfg.MCP; its wiring is filled here.
	mc := s.cfg.MCP
	mc.Registry, mc.Channel, mc.Auth, mc.Logger = s.registry, s.channel, s.auth, s.logger
	mc.Name, mc.Version = "toolsvc", version.Version
	mc.AuthFailed = func(err error) { s.authFailures.Record(callctx.TransportMCP, err) }
	mc.MetadataHeaders = s.metadataHeaders
	mc.ReplicaID = replicaID()
	if loopback.Addr(s.cfg.HTTPAddr) { // the endpoint's one guard answers as hostGuard
		mc.ForeignHost = http.HandlerFunc(refuseForeignHost)
	}
	if s.redis != nil && !mc.Stateless {
		// Sessions valid on every replica, and what changes told to all.
		mc.Sessions = redisfleet.NewSessions(s.redis, s.cfg.RedisKeyPrefix, max(s.cfg.RedisTimeout, time.Second))
	}
	if s.redis != nil {
		mc.Fanout = redisfleet.NewBus(s.redis, s.cfg.RedisKeyPrefix+"mcp:events")
	}
	if ts, ok := s.store.(mcptask.Store); ok {
		mc.Tasks = ts
	}
	b, err := mcpbridge.New(mc)
	if err != nil {
		return fmt.Errorf("MCP bridge: %w", err)
	}
	s.mcp = b
	s.listRelay.Store(b)
	stack.push(b.Close)
	s.jobs.Go("MCP bridge", b.Run)
	s.mux.Handle(mcpPath, b)
	s.mux.HandleFunc(mcpbridge.SetPattern, b.ServeToolSet)
	s.mux.Handle("GET "+mcpbridge.ProtectedResourcePath, b.ProtectedResourceMetadata())
	s.mux.Handle("GET "+mcpbridge.ProtectedResourcePath+"/mcp", b.ProtectedResourceMetadata())
	return nil
}

// mcpPath is the MCP endpoint's path.
const mcpPath = "/mcp"

// MCP returns the MCP bridge (the stdio command serves it).
func (s *Server) MCP() *mcpbridge.Bridge { return s.mcp }

// mcpHealth is the "mcp" part of /healthz: the figures of the tool-list
// cache, which lives in ToolService behind the chain and so serves MCP's
// tools/list and every other transport's listing alike.
func (s *Server) mcpHealth() any {
	if s.tools == nil {
		return nil
	}
	return s.tools.CacheStats()
}

// replicaID names this process to the fleet (task leases, fanout): the
// host name and a random suffix, unique across restarts.
func replicaID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	if host == "" {
		host = "toolsvc"
	}
	return host + "-" + hex.EncodeToString(b[:])
}

// listChanged relays an upstream's resources or prompts list change to
// the MCP transport's clients.
func (s *Server) listChanged(method string) {
	if b := s.listRelay.Load(); b != nil {
		b.ListChanged(method)
	}
}

// resourceUpdated relays an upstream's change of a subscribed resource to
// the MCP clients subscribed to it.
func (s *Server) resourceUpdated(uri string) {
	if b := s.listRelay.Load(); b != nil {
		b.ResourceUpdated(uri)
	}
}
