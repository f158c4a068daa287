package server

import (
	"fmt"

	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/version"
)

// mountMCP builds the MCP bridge, a client of the in-process channel (the
// same chain as gRPC), and serves it at /mcp with the OAuth protected
// resource metadata MCP clients discover from a 401.
func (s *Server) mountMCP(stack *closers) error {
	b, err := mcpbridge.New(mcpbridge.Config{
		Registry: s.Registry(), Channel: s.channel, Auth: s.auth, Logger: s.logger,
		Name: "toolsvc", Version: version.Version, PageSize: s.cfg.MCPPageSize,
		Stateless: s.cfg.MCPStateless, AllowedOrigins: s.cfg.MCPAllowedOrigins,
		MaxRequestBytes: int64(s.cfg.MaxRequestBytes), PublicURL: s.cfg.PublicURL,
		AuthorizationServers: s.cfg.AuthorizationServers, SessionsPerPrincipal: s.cfg.MCPSessionsPerPrincipal,
		ListenersPerPrincipal: s.cfg.MCPListenersPerPrincipal, TasksPerPrincipal: s.cfg.MCPTasksPerPrincipal, TaskTTL: s.cfg.MCPTaskTTL,
		ListDescriptionMaxChars: s.cfg.MCPListDescriptionMaxChars, ListStripSchemaMetadata: s.cfg.MCPListStripSchemaMetadata,
		ListTTL: s.cfg.MCPListTTL, ListMaxInFlight: s.cfg.MCPListMaxInFlight,
		AuthFailed:   func(err error) { s.authFailures.Record(interceptors.TransportMCP, err) },
		ManualReaper: true,
	})
	if err != nil {
		return fmt.Errorf("MCP bridge: %w", err)
	}
	s.mcp = b
	stack.push(b.Close)
	s.jobs.Go("MCP session reaper", b.RunReaper)
	s.mux.Handle("/mcp", b)
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
