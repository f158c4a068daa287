package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/lib/version"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/redisx"
)

// mountMCP builds the MCP bridge, a client of the in-process channel (the
// same chain as gRPC), and serves it at /mcp with the OAuth protected
// resource metadata MCP clients discover from a 401.
func (s *Server) mountMCP(stack *closers) error {
	mc := mcpbridge.Config{
		Registry: s.registry, Channel: s.channel, Auth: s.auth, Logger: s.logger,
		Name: "toolsvc", Version: version.Version, PageSize: s.cfg.MCPPageSize,
		Stateless: s.cfg.MCPStateless, AllowedOrigins: s.cfg.MCPAllowedOrigins,
		MaxRequestBytes: int64(s.cfg.MaxRequestBytes), PublicURL: s.cfg.PublicURL,
		AuthorizationServers: s.cfg.AuthorizationServers, SessionsPerPrincipal: s.cfg.MCPSessionsPerPrincipal,
		ListenersPerPrincipal: s.cfg.MCPListenersPerPrincipal, TasksPerPrincipal: s.cfg.MCPTasksPerPrincipal, TaskTTL: s.cfg.MCPTaskTTL, TaskLease: s.cfg.MCPTaskLease,
		ListDescriptionMaxChars: s.cfg.MCPListDescriptionMaxChars, ListStripSchemaMetadata: s.cfg.MCPListStripSchemaMetadata,
		ListFullSchemas: s.cfg.MCPListFullSchemas,
		ListTTL:         s.cfg.MCPListTTL, ListMaxInFlight: s.cfg.MCPListMaxInFlight,
		BatchMaxMessages: s.cfg.MCPBatchMaxMessages, BatchMaxAnswerBytes: s.cfg.MCPBatchMaxAnswerBytes,
		AuthFailed:      func(err error) { s.authFailures.Record(interceptors.TransportMCP, err) },
		MetadataHeaders: s.metadataHeaders,
		ReplicaID:       replicaID(),
		Manual:          true,
	}
	if s.redis != nil && !s.cfg.MCPStateless {
		// Sessions valid on every replica, and what changes told to all.
		mc.Sessions = redisx.NewSessions(s.redis, s.cfg.RedisKeyPrefix, max(s.cfg.RedisTimeout, time.Second))
	}
	if s.redis != nil {
		mc.Fanout = redisx.NewBus(s.redis, s.cfg.RedisKeyPrefix+"mcp:events")
	}
	if ts, ok := s.store.(store.TaskStore); ok {
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
	s.mux.Handle("/mcp", b)
	s.mux.HandleFunc(mcpbridge.SetPattern, b.ServeToolSet)
	s.mux.Handle("GET "+mcpbridge.ProtectedResourcePath, b.ProtectedResourceMetadata())
	s.mux.Handle("GET "+mcpbridge.ProtectedResourcePath+"/mcp", b.ProtectedResourceMetadata())
	return nil
}

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
